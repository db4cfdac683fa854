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
                identity descriptor, OpenBao token), as for exec. If another process owns org.freedesktop.secrets, exit 69 naming it.

                  keychain-cli --backend vault serve -- secret-tool lookup service ci user bot
                  keychain-cli --backend openbao serve &
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Take the name over from the process that owns it, if that process allows it.")
        var replace = false

        @Argument(parsing: .postTerminator, help: "A command to run against a private bus, after --.")
        var command: [String] = []

        func run() throws {
            let store = try settings.store()
            guard let detailed = store as? any DetailedSecretStore else {
                throw CommandFailure.usage(
                    "serve keeps its items in the vault or OpenBao: pass --backend vault or --backend openbao "
                        + "(serving the Secret Service from the Secret Service would answer itself)")
            }
            let provider = SecretServiceProvider(store: detailed)
            if command.isEmpty {
                guard let address = getenv("DBUS_SESSION_BUS_ADDRESS").map({ String(cString: $0) }), !address.isEmpty
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
            try provider.start(busAddress: bus.address, replace: false)
            settings.withholdSecretsFromCommands()
            setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
            let child = try spawn(command)
            bus.guardCommand(child)
            let exit = provider.run(watching: child)
            // A command serve can no longer serve (bus closed, name taken over, backend
            // unreadable) is ended rather than left running without its Secret Service.
            if case .childExited = exit {} else { terminate(child, graceSeconds: 5) }
            try finish(exit)
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
