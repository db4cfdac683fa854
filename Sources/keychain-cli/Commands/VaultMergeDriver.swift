import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct MergeDriver: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge-driver",
            abstract: "git's merge driver for a tree vault's items (vault git-setup sets it).",
            discussion: """
                git runs it as "vault merge-driver %O %A %B %P" for an item both branches changed: \
                the common ancestor's file (empty when both added the item), ours, theirs, and the \
                item's path in the repository (the vault is its grandparent). The three versions \
                are decrypted in memory with your identities and merged field by field: the value, \
                the label and the content type each take the side that changed them, the \
                attributes one by one; created is the earliest date, modified the latest. A clean merge is \
                encrypted to the work tree's DIR/.recipients and replaces %A; exit 0. Both sides \
                changing one field differently (or adding the item with different values) is a \
                conflict: "conflict: SERVICE/KEY" on standard error (never a value), %A is left as \
                ours, exit 1. An item none of your identities opens: exit 1, saying which identity \
                to give. Nothing decrypted is written anywhere.
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: ArgumentHelp("The common ancestor's version (%O; empty: none).", valueName: "base"))
        var base: String
        @Argument(help: ArgumentHelp("Ours (%A), replaced by the merge.", valueName: "ours"))
        var ours: String
        @Argument(help: ArgumentHelp("Theirs (%B).", valueName: "theirs"))
        var theirs: String
        @Argument(help: ArgumentHelp("The item's path in the repository (%P).", valueName: "path"))
        var path: String

        func run() throws {
            guard let item = TreeVaultItemPath(path) else {
                let name = splitPath(path).name
                let what =
                    name == TreeVaultStore.fingerprintFile
                    ? "both sides made a new fingerprint key; keep either (git checkout --ours or --theirs)"
                    : name == TreeVaultStore.identityFile
                        ? "both sides changed the vault's passphrase; keep the one you know (git checkout --ours)"
                        : "it is not an item of a tree vault (SERVICE/KEY.age)"
                warn("conflict: \(escapedForDisplay(path)): \(what)")
                throw ExitCode(1)
            }
            var settings = settings
            settings.vault = item.directory
            let store = TreeVaultStore(
                directory: item.directory, identities: try identities(settings, vault: item.directory),
                passphrase: settings.passphraseSource(vault: item.directory, newPassphrase: nil))
            let outcome: TreeVaultMergeOutcome
            do {
                let base = try read(base)
                outcome = try store.merge(
                    base: base.isEmpty ? nil : base, ours: try read(ours), theirs: try read(theirs), at: item)
            } catch {
                let reason = failureMessage(error) ?? "\(error)"
                warn(
                    "cannot merge \(item.shown) (a conflict for git; \(TreeVaultGit.driver) runs with your "
                        + "environment): \(reason)")
                throw ExitCode(1)
            }
            switch outcome {
            case .conflict(let fields):
                warn(
                    "conflict: \(item.shown): both sides changed its \(fields.joined(separator: ", ")) differently; "
                        + "ours is kept in the file: store the one you want with keychain-cli set, then git add it")
                throw ExitCode(1)
            case .merged(let bytes):
                do {
                    try writeFileAtomically(ours, bytes)
                } catch {
                    warn("cannot merge \(item.shown): \(error)")
                    throw ExitCode(1)
                }
            }
        }

        /// One of git's temporary files, whole (an item file is at most 8 MiB).
        private func read(_ file: String) throws -> [UInt8] {
            do {
                return try readFileIfPresent(file, limit: 16 << 20) ?? []
            } catch {
                throw CommandFailure.io("\(error)")
            }
        }
    }
}
