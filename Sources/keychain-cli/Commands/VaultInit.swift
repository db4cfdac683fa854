import ArgumentParser
import KeychainCore

extension KeychainCLI.Vault {
    struct Init: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a tree vault: a directory with one age file per secret, for git.",
            discussion: """
                Each secret is its own age file, DIR/SERVICE/KEY.age, encrypted to the recipients \
                listed in DIR/.recipients (plaintext, one per line, as age -R reads it), so that \
                two branches that change different secrets merge with plain git, a review sees \
                who was added or removed, and a write re-encrypts one file. With no recipient, a \
                passphrase tree vault: a new age identity is kept in DIR/.identity.age, encrypted \
                with the passphrase (--passphrase-fd, --passphrase-file, $KEYCHAIN_PASSPHRASE or \
                a prompt asked twice); one scrypt then opens every item. With --signing-key, \
                .recipients is signed (.recipients.sig) and so is every later write. DIR is made (0700); an \
                existing one must be empty but for dot files (a .git). Every command then takes \
                --vault DIR (or $KEYCHAIN_VAULT=DIR). See docs/backends/vault.md, "Tree vaults".

                  keychain-cli vault init secrets --recipient age1… --recipients-file team.txt
                  keychain-cli --vault secrets -s ci set github-token
                  keychain-cli --passphrase-file ~/.vault-pass vault init ~/vault
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: ArgumentHelp("The vault's directory (default: --vault, $KEYCHAIN_VAULT).", valueName: "dir"))
        var directory: String?

        @Option(
            name: .customLong("recipient"),
            help: ArgumentHelp(
                "An age1… (or an age plugin's age1NAME1…), \"ssh-ed25519 AAAA…\" or \"ssh-rsa AAAA…\" public key to "
                    + "encrypt to (repeatable).", valueName: "recipient"))
        var recipients: [String] = []

        @Option(
            help: ArgumentHelp(
                "A file of recipients, one per line as age -R reads it (repeatable; - is standard input).",
                valueName: "path"),
            completion: .file())
        var recipientsFile: [String] = []

        func run() throws {
            var settings = settings
            if let directory { settings.vault = directory }
            let path = try settings.vaultPath(initializing: true)
            let recipients = try parseRecipients(recipients) + parseRecipients(recipientsFile)
            var unique: [VaultRecipient] = []
            for recipient in recipients where !unique.contains(recipient) { unique.append(recipient) }
            let source = settings.passphraseSource(vault: path, newPassphrase: nil)
            settings.configureAgePlugins(timeout: try settings.resolvedTimeout())
            try TreeVaultStore.create(
                directory: path, recipients: unique,
                passphrase: unique.isEmpty ? { () throws(KeychainError) in try source(.create) } : nil,
                workFactor: try settings.vaultWorkFactor(), signing: try settings.vaultSigning())
            let id = (try? settings.treeVaultStore()?.id()) ?? nil
            warn(
                (unique.isEmpty
                    ? "\(path): a tree vault opened by its passphrase (its identity is in \(TreeVaultStore.identityFile))"
                    : "\(path): a tree vault for \(unique.count) recipient\(unique.count == 1 ? "" : "s") "
                        + "(listed in \(TreeVaultStore.recipientsFile))")
                    + (id.map { "; its id is \($0) (KEYCHAIN_VAULT_ID pins it for readers)" } ?? ""))
        }
    }
}
