import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Watch: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each change to the service's items as it happens, until interrupted.",
            discussion: """
                One line per change, written and flushed as it is seen: "created SERVICE KEY", \
                "changed SERVICE KEY" or "deleted SERVICE KEY" (names escaped as list prints them). \
                With --json, one JSON object per line: kind, service, key, time (ISO 8601, \
                milliseconds) and, when the backend records it, application (the writing program). \
                Secrets never appear. It watches until SIGINT, SIGTERM or SIGHUP, then exits 0 \
                (within 1 s even when nobody reads its output); if the backend goes away it exits \
                with that failure's code (69: the Secret Service or OpenBao left; 74: the vault's \
                directory is gone, or it and its parent are missing; 65: the vault stays damaged; 77: another process re-keyed the \
                vault, and what opened it, a passphrase file read again included, still does not \
                after --timeout).

                Secret Service: its signals, within milliseconds, for changes by any program \
                (keychain-cli, secret-tool, python keyring); another program that only calls \
                SetSecret makes the keyring send none, so the items' modification times are \
                also asked every --interval seconds, 25 items per poll, in turn (the times count \
                whole seconds); a lock or unlock of the keyring is no change. Vault: a file \
                notification when a writer replaces the file, then a re-read (no new scrypt while \
                the header is unchanged), repeated while a non-atomic writer (git checkout) is at \
                work; a vault that is a link is followed anew (Kubernetes secret volumes). \
                OpenBao: one read of the service's secret every --interval seconds (of every \
                secret under the mount with --all-services).

                  keychain-cli -s ci watch
                  keychain-cli watch --all-services --json | while read -r event; do …; done
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Watch the items of every service.")
        var allServices = false

        @Flag(help: "Print one JSON object per line.")
        var json = false

        @Option(help: ArgumentHelp("Seconds between two polls, where the backend is polled.", valueName: "seconds"))
        var interval = 1.0

        func validate() throws {
            guard interval >= 0.1, interval <= 3600 else {
                throw ValidationError("--interval must be between 0.1 and 3600 seconds")
            }
        }

        func run() throws {
            let store = try settings.store()
            // The vault's own watch makes its directory with every missing parent, as the writer
            // serve needs; a reader makes at most that directory, in one that exists
            // (~/.local/share/keychain-cli), never a path (`--vault /mistyped/dir/v.age`).
            if let vault = store as? VaultStore {
                let directory = splitPath(vault.path).directory
                var status = stat()
                guard stat(directory, &status) == 0 || stat(splitPath(directory).directory, &status) == 0 else {
                    let reason = errno
                    guard reason == ENOENT || reason == ENOTDIR else {
                        throw CommandFailure(
                            kind: .io,
                            message: "cannot look at the vault's directory \(quotedPath(directory)) ("
                                + String(cString: strerror(reason))
                                + "). Check its permissions, --vault or $KEYCHAIN_VAULT")
                    }
                    throw CommandFailure(
                        kind: .io,
                        message:
                            "neither the vault's directory \(quotedPath(directory)) nor its parent exists: nothing to watch. "
                            + "Check --vault or $KEYCHAIN_VAULT; the first set makes it")
                }
            }
            let service = allServices ? nil : try settings.serviceName()
            let failure = Locked<(any Error)?>(nil)
            let main = pthread_self()
            // A failure is told by SIGUSR1, blocked first so that it cannot end the process; the
            // others are blocked once watching has begun (^C at a passphrase prompt still ends it).
            var signals = sigset_t()
            sigemptyset(&signals)
            sigaddset(&signals, SIGUSR1)
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            let encoder = JSONEncoder.sortedKeys()
            let watch = try store.watch(service: service, interval: interval) { event in
                do {
                    switch event {
                    case .change(let change):
                        try writeOutput(json ? try encoder.encode(Line(change)) + [10] : Array(Self.text(change).utf8))
                        return
                    case .failure(let error):
                        throw error
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                    pthread_kill(main, SIGUSR1)
                }
            }
            // The watcher's thread blocks these; here they are waited for, not handled.
            for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, signal) }
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            var received: Int32 = 0
            repeat {
                sigwait(&signals, &received)
            } while received == SIGUSR1 && failure.withLock({ $0 == nil })
            // A report may be stuck writing to a full pipe that nobody reads: the signal ends the
            // process all the same (its last line is then cut, or not written).
            watch.cancel(waitingAtMost: 1)
            if let error = failure.withLock({ $0 }) { throw error }
        }

        static func text(_ change: StoreChange) -> String {
            "\(change.kind.rawValue) \(escapedForDisplay(change.service)) \(escapedForDisplay(change.key))\n"
        }

        /// One `--json` line.
        struct Line: Encodable {
            var kind: StoreChange.Kind
            var service: String
            var key: String
            var time: String
            var application: String?

            init(_ change: StoreChange) {
                kind = change.kind
                service = change.service
                key = change.key
                time = change.time.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
                application = change.application
            }
        }
    }
}
