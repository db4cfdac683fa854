import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Serve: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Be the Secret Service (org.freedesktop.secrets), keeping its items in the vault or OpenBao.",
            discussion: """
                For machines without a Secret Service (servers, containers, CI runners): programs \
                built on libsecret (secret-tool, git-credential-libsecret) or python keyring \
                keep their secrets in the chosen backend (--backend vault, a team vault, or openbao). \
                An item with a service and a username attribute is the backend's item SERVICE/USERNAME, \
                so 'keychain-cli get' reads what 'secret-tool store service S username U' stored; any \
                other item is kept under the service secret-service. Every write is stored before the \
                client is answered.

                Without a command, serve on the session bus ($DBUS_SESSION_BUS_ADDRESS) until SIGTERM, \
                SIGINT or SIGHUP, then exit 0. With a command after --, start a private session bus, \
                serve on it, run the command with DBUS_SESSION_BUS_ADDRESS set to it once the service \
                is ready, then stop, exiting with the command's status (127 if it cannot be found, 126 \
                if it cannot be run, 128+N if signal N killed it). The vault's passphrase is asked \
                once, at start; the command gets none of keychain-cli's own secrets (passphrases, \
                identity descriptor, OpenBao token), as for exec. Its output and errors are masked \
                as exec masks them, hiding every secret the backend holds when it starts and every \
                secret a client stores or reads while it runs (--no-mask: not). If another process \
                owns org.freedesktop.secrets, exit 69 naming it. serve's memory is locked against \
                swap where it may lock all of it (root, or ulimit -l unlimited; else it says so \
                once) and is left out of core dumps.

                --access-log FILE appends one JSON line per read, write and delete of an item \
                (time, operation, service, key, allowed, and the client's pid, uid and executable, \
                as the bus tells them; never a secret). --allow-exe PATH (repeatable) lets only \
                those programs read secrets: any other is answered \
                org.freedesktop.DBus.Error.AccessDenied, and the refusal is logged.

                  keychain-cli --backend vault serve -- secret-tool lookup service ci user bot
                  keychain-cli --backend openbao serve &
                  keychain-cli serve --access-log a.log --allow-exe /usr/bin/git -- ./deploy
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Take the name over from the process that owns it, if that process allows it.")
        var replace = false

        @Flag(help: "With a command: do not mask its output.")
        var noMask = false

        @Option(
            help: ArgumentHelp(
                "Append a JSON line per read, write and delete of an item to this file (created 0600).",
                valueName: "path"),
            completion: .file())
        var accessLog: String?

        @Option(
            help: ArgumentHelp(
                "Let only this program read secrets (repeat for several); others are refused.", valueName: "path"),
            completion: .file())
        var allowExe: [String] = []

        @Argument(parsing: .postTerminator, help: "A command to run against a private bus, after --.")
        var command: [String] = []

        func validate() throws {
            do {
                try PathValue.check(accessLog, of: "--access-log")
                for path in allowExe { try PathValue.check(path, of: "--allow-exe") }
            } catch let failure as CommandFailure {
                throw ValidationError(failure.message)
            }
        }

        func run() throws {
            let store = try settings.store(throughHolder: false)
            guard let detailed = store as? any DetailedSecretStore else {
                throw CommandFailure.usage(
                    "serve keeps its items in the vault or OpenBao: pass --backend vault or --backend openbao "
                        + "(serving the Secret Service from the Secret Service would answer itself)")
            }
            // Before the backend is opened: the vault's plaintext is read into locked memory.
            for warning in Startup.holdSecretsSafely("serve") { writeError(warning) }
            let provider = SecretServiceProvider(
                store: detailed, policy: try AccessPolicy.forCommand(logPath: accessLog, allowedExecutables: allowExe))
            if command.isEmpty {
                guard let address = Environment.value("DBUS_SESSION_BUS_ADDRESS")
                else {
                    throw KeychainError.noSessionBus(
                        detail:
                            "DBUS_SESSION_BUS_ADDRESS is not set; or run a command on a private bus: serve -- COMMAND")
                }
                try provider.start(busAddress: address, replace: replace)
                try finish(provider.run())
                return
            }
            // The passphrase and the vault's scrypt first: a signal meanwhile leaves nothing behind.
            try provider.open()
            // From the private bus on, a stopping signal waits for serve's loop, which passes it
            // on to the command: by default it would end serve, and leave the command without its bus.
            provider.handleStoppingSignals()
            let bus = try PrivateBus.start()
            defer { bus.stop() }
            // The command's environment, set before start() starts the backend's watcher thread
            // (libcurl reads proxy variables there): no thread may read the environment while it changes.
            settings.withholdSecretsFromCommands()
            setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
            try provider.start(busAddress: bus.address, replace: false)
            let relay = noMask ? nil : try MaskedRelay(provider: provider, store: detailed)
            // The guardian knows the command before the command can act (tell a client it is
            // ready, say): serve killed a moment after its start still takes the command with it.
            let held = try HeldCommand(command, output: relay?.output.given ?? [])
            bus.guardCommand(held.pid)
            try held.release()
            let child = held.pid
            relay?.output.commandStarted(child)
            let exit = provider.run(watching: child)
            // A command serve can no longer serve (bus closed, name taken over, backend
            // unreadable) is ended rather than left running without its Secret Service.
            if case .childExited = exit {} else { terminate(child, graceSeconds: 5) }
            try relay?.finish()
            try finish(exit)
        }

        /// `serve -- COMMAND`'s masked output: every secret the backend holds, and every one that
        /// passes through serve while the command runs, hidden in what it writes, by a thread of
        /// its own (serve's loop answers the bus).
        private struct MaskedRelay {
            let output: MaskedOutput
            let done = Locked(false)
            let lostOutput = Locked(false)
            let wake: (read: Int32, write: Int32)
            let thread: StoreWatch

            init(provider: SecretServiceProvider, store: any DetailedSecretStore) throws {
                let addresses = try store.items(service: nil).compactMap { item in
                    (try? ServiceName(item.service)).flatMap { service in
                        (try? KeychainKey(item.key)).map { SecretAddress(service: service, key: $0) }
                    }
                }
                let masks = OutputMasks(try store.secrets(of: addresses).compactMap { $0.map { Array($0) } })
                provider.secretObserver = { masks.add(Array($0)) }
                let output = try MaskedOutput.open()
                output.catchSignals()
                guard let wake = makePipe() else { throw pipeFailure() }
                let done = done
                let lostOutput = lostOutput
                self.output = output
                self.wake = wake
                thread = try StoreWatch.start { _, ready in
                    ready(nil)
                    let lost = relay(output, masks: masks, wake: wake.read) { done.withLock { $0 } }
                    lostOutput.withLock { $0 = lost }
                }
            }

            /// Once the command has ended: waits for what it wrote to be written on (at most 3 s).
            /// - Throws: ``CommandFailure`` (74) when some of it could not be written.
            func finish() throws {
                done.withLock { $0 = true }
                _ = write(wake.write, "x", 1)
                thread.cancel(waitingAtMost: 3)
                if lostOutput.withLock({ $0 }) { throw ExitCode(74) }
            }
        }

        /// Ends as the provider's run ended: 0 when stopped by a signal; the command's status.
        private func finish(_ exit: SecretServiceProvider.Exit) throws {
            switch exit {
            case .stopped:
                return
            case .childExited(let status):
                // WIFEXITED / WTERMSIG, which Swift cannot import (macros).
                let signal = status & 0x7f
                throw ExitCode(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
            case .nameLost(let owner):
                throw KeychainError.nameTaken(name: "org.freedesktop.secrets", owner: owner, conflict: .takenOver)
            case .backendFailed(let error):
                throw error
            case .busClosed:
                throw KeychainError.noSessionBus(detail: "the bus closed serve's connection")
            }
        }
    }
}
