import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Doctor: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check that the chosen backend works here, step by step, and say what to fix.",
            discussion: """
                The Secret Service, in order: a session bus; a provider that owns or can activate \
                org.freedesktop.secrets; a default keyring; that it is unlocked; a store, read and \
                delete of a probe item. OpenBao (--backend openbao), in order: the settings \
                (address, mount, where the token comes from); the server (reachable, TLS, unsealed); \
                the token; the KV version 2 mount; the token's capabilities on the service's secret; \
                a read of it (no probe write: each write would add a KV version). The vault (--backend vault), in order: the file (mode \
                0600, or not created yet); its directory; the identity file (mode 0600, yours) \
                when one is given; what locks the vault: for a team vault, which identity opens \
                it, else the passphrase source; that the vault opens. One line each, ✓ or ✗ with the fix; after a failure \
                the rest are skipped. Exits 0 only when everything works, otherwise with the \
                first failure's code (65, 69, 74, 75 or 77).

                  keychain-cli doctor
                  keychain-cli doctor --json
                  KEYCHAIN_BACKEND=vault keychain-cli doctor
                  keychain-cli --backend openbao -s ci doctor
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Print the checks as a JSON array of {name, status, detail}.")
        var json = false

        func run() throws {
            let settings = self.settings
            let timeout = try settings.resolvedTimeout()
            var (checks, failure) =
                switch try settings.resolvedBackend() {
                case .secretService: try settings.secretServiceStore(timeout: timeout).diagnose()
                case .openbao:
                    OpenBaoStore.diagnose(service: try settings.serviceName()) {
                        try settings.openBaoStore(timeout: timeout)
                    }
                case .vault:
                    if let tree = try settings.treeVaultStore(timeout: timeout) {
                        tree.diagnose(
                            passphraseSource: PassphraseInput(settings).description,
                            identitySource: try identitySource(settings).map { ($0.name, $0.path) })
                    } else {
                        try settings.vaultStore(timeout: timeout).diagnose(
                            passphraseSource: PassphraseInput(settings).description,
                            identitySource: try identitySource(settings).map { ($0.name, $0.path) })
                    }
                }
            // The failed check says what to do next in the words `get` would use for the same
            // failure (Hints.swift): the library's detail says only what happened.
            if let failure, let index = checks.firstIndex(where: { $0.status == .failed }) {
                checks[index].detail = describedWithHint(failure)
            }
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
