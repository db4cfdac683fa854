import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct MergeDriver: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "merge-driver",
            abstract: "git's merge driver for a tree vault's items (vault git-setup sets it).",
            discussion: """
                git runs it as "vault merge-driver -- %O %A %B %P" for an item both branches changed: \
                the common ancestor's file (empty when both added the item), ours, theirs, and the \
                item's path in the repository (the vault is its grandparent). The three versions \
                are decrypted in memory with your identities and merged field by field: the value, \
                the label and the content type each take the side that changed them, the \
                attributes one by one; created is the earliest date, modified the latest. A clean merge is \
                encrypted to the merge of both sides' DIR/.recipients (git merge names theirs in \
                $GITHEAD_<commit>; in a rebase or cherry-pick, to the work tree's, and a value from \
                the commit replayed is a conflict) and replaces %A; exit 0. Both sides \
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
            let name = splitPath(path).name
            if name == TreeVaultStore.fingerprintFile { return try mergeFingerprintKeys() }
            guard let item = TreeVaultItemPath(path) else {
                let what =
                    name == TreeVaultStore.identityFile
                    ? "both sides changed the vault's passphrase; keep the one you know (git checkout --ours)"
                    : "it is not an item of a tree vault (SERVICE/KEY.age)"
                warn("conflict: \(escapedForDisplay(path)): \(what)")
                throw ExitCode(1)
            }
            let outcome: TreeVaultMergeOutcome
            do {
                let store = try vault(item.directory)
                let base = try read(base)
                outcome = try store.merge(
                    base: base.isEmpty ? nil : base, ours: try read(ours), theirs: try read(theirs), at: item,
                    to: try mergedRecipients(of: item.directory, in: store))
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
            case .theirRecipientsUnknown:
                warn(
                    "conflict: \(item.shown): the merged value is theirs, and git did not say which commit is "
                        + "theirs (a rebase or cherry-pick, not a merge), so who may read it is not known; ours "
                        + "is kept in the file: store the value you want with keychain-cli set, then git add it")
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

        /// Both sides changed `.fingerprint.age`: the same key re-encrypted, or a new one, to the
        /// merged recipients; a conflict when they are not known or a key does not open.
        private func mergeFingerprintKeys() throws {
            let directory = splitPath(path).directory
            let merged: [UInt8]?
            do {
                let store = try vault(directory)
                merged = try store.mergeFingerprintKeys(
                    ours: try read(ours), theirs: try read(theirs), to: try mergedRecipients(of: directory, in: store))
            } catch {
                warn(
                    "cannot merge \(escapedForDisplay(path)) (a conflict for git): \(failureMessage(error) ?? "\(error)")"
                )
                throw ExitCode(1)
            }
            guard let merged else {
                warn(
                    "conflict: \(escapedForDisplay(path)): both sides changed the fingerprint key, and git did not "
                        + "say which commit is theirs; keep either (git checkout --ours), or remove it and run "
                        + "vault git-setup for a new one")
                throw ExitCode(1)
            }
            do {
                try writeFileAtomically(ours, merged)
            } catch {
                warn("cannot merge \(escapedForDisplay(path)): \(error)")
                throw ExitCode(1)
            }
        }

        /// The tree vault in `directory` (relative to the work tree's top, where git runs us),
        /// opened with the identities of the environment git runs in.
        private func vault(_ directory: String) throws -> TreeVaultStore {
            var settings = settings
            settings.vault = directory
            return try treeVault(settings, for: "merge-driver")
        }

        /// The recipients of the merge of `.recipients` in `directory` as HEAD, theirs and their
        /// merge base hold it: `git merge` names theirs in `$GITHEAD_<commit>`. Nil when no
        /// single commit is named (a rebase, a cherry-pick, an octopus merge) or git cannot read them.
        /// In a signed vault (or with --require-signed) each of the three lists must be signed by an
        /// allowed signer at its commit: a branch that added a recipient nobody allowed is a conflict.
        private func mergedRecipients(of directory: String, in store: TreeVaultStore) throws -> [VaultRecipient]? {
            // The work tree's list too: with no commit named, the merge encrypts to it.
            let checked = store.isSigned || store.signing.required
            if checked { try store.requireSignedRecipientsNow() }
            let named = Environment.all(except: []).compactMap { entry -> String? in
                guard entry.hasPrefix("GITHEAD_"), let equals = entry.firstIndex(of: "=") else { return nil }
                let commit = entry[entry.index(entry.startIndex, offsetBy: 8)..<equals]
                return commit.count >= 40 && commit.allSatisfy(\.isHexDigit) ? String(commit) : nil
            }
            guard named.count == 1, let theirs = named.first else { return nil }
            let base = try runGit(["merge-base", "HEAD", theirs], in: ".")
            let baseCommit = String(decoding: base.output, as: UTF8.self).split(separator: "\n").first.map(String.init)
            guard base.succeeded, let baseCommit else { return nil }
            let path =
                directory == "." ? TreeVaultStore.recipientsFile : "\(directory)/\(TreeVaultStore.recipientsFile)"
            func listed(_ commit: String) throws -> [VaultRecipient]? {
                let blob = try runGit(["cat-file", "blob", "\(commit):\(path)"], in: ".", limit: 1 << 20)
                guard blob.succeeded else { return [] }
                if checked {
                    let signature = try runGit(
                        ["cat-file", "blob", "\(commit):\(path)\(VaultSigning.suffix)"], in: ".", limit: 1 << 16)
                    try store.requireSigned(
                        recipients: blob.output, signature: signature.succeeded ? signature.output : nil,
                        at: String(commit.prefix(12)))
                }
                return try? VaultRecipient.parse(recipientsFile: String(decoding: blob.output, as: UTF8.self))
            }
            guard let ours = try listed("HEAD"), let theirsListed = try listed(theirs),
                let before = try listed(baseCommit)
            else { return nil }
            return TreeVaultStore.mergeRecipients(base: before, ours: ours, theirs: theirsListed)
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
