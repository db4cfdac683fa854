import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct Recipients: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List, add or remove the age recipients a vault is encrypted to.",
            discussion: """
                A recipient is an age public key (age1…), an age plugin's recipient (age1NAME1…, \
                wrapped by age-plugin-NAME from PATH), an ssh-ed25519 public key ("ssh-ed25519 AAAA… \
                comment", one argument) or an ssh-rsa one of 2048 bits or more ("ssh-rsa AAAA…"); an \
                argument that is none of them is read \
                as a file of recipients, one per line as age -R reads it (# comments, blank \
                lines), and - reads them from standard input. Adding or removing re-keys the \
                vault. The vault must open first: with an identity, or with the passphrase when \
                it is still a passphrase vault (adding recipients to one turns it into a team \
                vault: the passphrase no longer opens it). A missing vault is created, empty.
                """,
            subcommands: [List.self, Add.self, Remove.self], defaultSubcommand: List.self)
    }
}

extension KeychainCLI.Vault.Recipients {
    struct List: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the vault's recipients, one per line.",
            discussion: """
                Exits 1 when there is no vault. A passphrase vault has no recipients: nothing is \
                printed, and a note says so on standard error.

                  KEYCHAIN_IDENTITY=~/.config/keychain-cli/identity.txt \\
                      keychain-cli --vault ci/secrets.age vault recipients list
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        func run() throws {
            if let tree = try settings.treeVaultStore() {
                return try writeOutput(Array(try tree.recipients().map { "\($0)\n" }.joined().utf8))
            }
            let store = try settings.vaultStore()
            switch try store.lock() {
            case .noVault:
                throw CommandFailure.notFound("there is no vault at \(store.path)")
            case .passphrase:
                warn("\(store.path) is locked by a passphrase: it has no recipients")
            case .recipients(nil, let types):
                warn(
                    "\(store.path) is encrypted to \(types.count) recipient\(types.count == 1 ? "" : "s") "
                        + "(\(types.joined(separator: ", "))) that its document does not list (it was encrypted by "
                        + "another tool); `vault recipients add` with all of them re-keys it and keeps the list")
            case .recipients(let recipients?, _):
                try writeOutput(Array(recipients.map { "\($0)\n" }.joined().utf8))
            }
        }
    }

    struct Add: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Encrypt the vault to more recipients (re-keys it).",
            discussion: """
                  keychain-cli vault recipients add age1… ~/.ssh/id_ed25519.pub
                  keychain-cli --vault ci/secrets.age vault recipients add team-recipients.txt
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: recipientsHelp, completion: .file())
        var recipients: [String]

        func run() throws {
            let added = try parseRecipients(recipients)
            if let tree = try settings.treeVaultStore() {
                let (before, after) = try tree.changeRecipients { current in
                    current + added.filter { !current.contains($0) }.uniqued()
                }
                return report(path: tree.directory, before: before, after: after)
            }
            let store = try settings.vaultStore()
            let lock = try store.lock()
            let (before, after) = try store.changeRecipients { current in
                current + added.filter { !current.contains($0) }.uniqued()
            }
            if lock == .passphrase {
                warn("\(store.path) was locked by a passphrase; now only its recipients' identities open it")
            } else if case .recipients(nil, let types) = lock {
                warn(
                    "\(store.path) listed none of its \(types.count) earlier recipients (another tool encrypted it); "
                        + "it is now encrypted to exactly the \(after.count) given")
            }
            report(path: store.path, before: before, after: after)
        }
    }

    struct Remove: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop encrypting the vault to some recipients (re-keys it).",
            discussion: """
                Each one must be a recipient now (nothing changes otherwise), and one at least \
                must stay. Those removed cannot open the new version, nor later ones; copies they \
                already have stay readable to them: rotate the secrets they knew.

                  keychain-cli --vault ci/secrets.age --identity ~/.ssh/id_ed25519 \\
                      vault recipients remove age1…
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: recipientsHelp, completion: .file())
        var recipients: [String]

        func run() throws {
            let removed = try parseRecipients(recipients)
            if let tree = try settings.treeVaultStore() {
                let (before, after) = try tree.changeRecipients(removing(removed))
                report(path: tree.directory, before: before, after: after)
                return warnIfLockedOut(tree.directory, mayOpen: tree.identitiesMayOpen(after))
            }
            let store = try settings.vaultStore()
            guard case .recipients(let listed, _) = try store.lock() else {
                throw CommandFailure.usage("\(store.path) is not a team vault: it has no recipients to remove")
            }
            // Checked first on the version just read, so that a mistyped recipient is refused
            // without waiting for the write lock, then again under it (another writer may change
            // the recipients in between).
            if let listed, let missing = removed.first(where: { !listed.contains($0) }) {
                throw KeychainError.badConfiguration(
                    detail: "\(missing.key) is not one of the vault's recipients; nothing changed")
            }
            // Checked under the write lock, on the version being replaced: another writer may
            // have changed the recipients since the look above.
            let (before, after) = try store.changeRecipients(removing(removed))
            report(path: store.path, before: before, after: after)
            warnIfLockedOut(store.path, mayOpen: store.identitiesMayOpen(after))
        }
    }
}

/// The change that removes `removed`, each of which must be a recipient of the version it
/// changes (checked under the write lock: another writer may have changed them meanwhile).
private func removing(_ removed: [VaultRecipient]) -> ([VaultRecipient]) throws(KeychainError) -> [VaultRecipient] {
    { current throws(KeychainError) in
        if let missing = removed.first(where: { !current.contains($0) }) {
            throw .badConfiguration(detail: "\(missing.key) is not one of the vault's recipients; nothing changed")
        }
        return current.filter { !removed.contains($0) }
    }
}

private func warnIfLockedOut(_ path: String, mayOpen: Bool?) {
    if mayOpen == false {
        warn("none of your identities opens \(path) any more")
    }
}

let recipientsHelp = ArgumentHelp(
    "age1…, age1NAME1… (an age plugin's), \"ssh-ed25519 AAAA…\", \"ssh-rsa AAAA…\", a file of them, or -.",
    valueName: "recipient")

/// The recipients the arguments give: recipients themselves, files of them, or - for standard input.
func parseRecipients(_ arguments: [String]) throws -> [VaultRecipient] {
    var recipients: [VaultRecipient] = []
    for argument in arguments {
        // A secret key (an identity file's content, a private key) is refused without being
        // repeated, wherever in the argument it stands.
        if let kind = privateKeyKind(argument), access(argument, F_OK) != 0 {
            throw CommandFailure.usage(
                "a recipient argument holds \(kind): that is an identity (a private key), not a recipient, and "
                    + "it is not repeated here. Give its public key: age1… (the '# public key:' line of the "
                    + "identity file, or age-keygen -y), \"ssh-ed25519 AAAA…\" (the .pub file), or a file of them")
        }
        // A key itself, else a file of them.
        let isKey = ["age1", "ssh-", "AGE-SECRET-KEY-"].contains { argument.hasPrefix($0) }
        do {
            if isKey {
                recipients.append(try VaultRecipient(argument))
            } else {
                guard let bytes = try readInput(path: argument == "-" ? nil : argument, limit: smallInputLimit) else {
                    throw CommandFailure.badData(
                        "\(quotedPath(argument)) is larger than 1 MiB; a recipients file holds age1… or ssh- lines")
                }
                let parsed = try VaultRecipient.parse(recipientsFile: String(decoding: bytes, as: UTF8.self))
                guard !parsed.isEmpty else {
                    throw CommandFailure.badData("\(quotedPath(argument)) holds no recipient")
                }
                recipients += parsed
            }
        } catch let error as RecipientError {
            throw CommandFailure.usage((isKey ? "" : "\(argument): ") + describedWithHint(error))
        }
    }
    return recipients
}

private func report(path: String, before: [VaultRecipient], after: [VaultRecipient]) {
    HolderProcess.forgetRekeyed(path)
    let added = after.filter { !before.contains($0) }.count
    let removed = before.filter { !after.contains($0) }.count
    warn(
        "\(path): \(added) added, \(removed) removed; re-keyed for \(after.count) "
            + "recipient\(after.count == 1 ? "" : "s")")
}

extension Array where Element: Hashable {
    fileprivate func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
