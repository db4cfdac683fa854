import ArgumentParser
import KeychainCore

extension KeychainCLI {
    struct Rollback: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store again the value KEY had at an earlier version.",
            discussion: """
                Reads the value the item had at REV — a git revision for a tree vault in git \
                (a commit, HEAD~2, a tag), a version number for OpenBao (see history) — and \
                stores it as a new write: history keeps both. The item's details are kept as \
                they are now. Exits 1 when the item had no value at REV (not yet created, or \
                deleted there), 69 where the backend keeps no versions.

                  keychain-cli --vault secrets -s ci rollback github-token --to 3f2a1c9
                  keychain-cli --backend openbao -s ci rollback github-token --to 4
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the secret.", completion: .keyNames)
        var key: String

        @Option(
            help: ArgumentHelp(
                "The version to restore: a git revision, or an OpenBao version number.", valueName: "rev"))
        var to: String

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            let store = try versionedStore(keychain.store, timeout: try settings.resolvedTimeout())
            guard let secret = try store.secret(service: keychain.service, key: key, at: to) else {
                throw CommandFailure.notFound(
                    "\(key) had no value at \(escapedForDisplay(to)) (not created yet, or deleted there); "
                        + "'keychain-cli history \(key)' lists its versions")
            }
            try store.setSecret(secret, service: keychain.service, key: key)
            warn("\(key): stored again as it was at \(escapedForDisplay(to))")
        }
    }
}
