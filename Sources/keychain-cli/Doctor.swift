import ArgumentParser
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

extension KeychainCLI {
    struct Doctor: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that the keyring works here, step by step, and say what to fix.",
            discussion: """
                Checks in order: a session bus; a Secret Service provider that owns or can \
                activate org.freedesktop.secrets; a default keyring; that it is unlocked; a store, \
                read and delete of a probe item. One line each, ✓ or ✗ with the fix; after a \
                failure the rest are skipped. Exits 0 only when everything works, otherwise \
                with the first failure's code (69, 75 or 77).

                  keychain-cli doctor
                  keychain-cli doctor --json
                """)

        @OptionGroup var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Print the checks as a JSON array of {name, status, detail}.")
        var json = false

        func run() throws {
            let timeout = globals.timeout ?? root.globals.timeout ?? SecretServiceStore.defaultTimeout
            let (checks, failure) = SecretServiceStore(timeout: timeout).diagnose()
            if json {
                try writeJSON(checks)
            } else {
                var text = ""
                for check in checks {
                    let mark = check.status == .ok ? "✓" : check.status == .failed ? "✗" : "-"
                    text += "\(mark) \(check.name): \(check.detail)\n"
                }
                try writeOutput(Array(text.utf8))
            }
            if let failure { throw ExitCode(exitStatus(for: failure)) }
        }
    }
}
