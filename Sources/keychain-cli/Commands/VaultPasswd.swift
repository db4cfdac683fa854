import ArgumentParser
import KeychainCore

extension KeychainCLI.Vault {
    struct Passwd: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change the vault's passphrase (re-keys it).",
            discussion: """
                Opens the vault as every command does (the current passphrase from \
                --passphrase-fd, --passphrase-file, $KEYCHAIN_PASSPHRASE or a prompt; or an \
                identity), then encrypts it to the new passphrase with a new file key: from \
                --new-passphrase-fd, --new-passphrase-file, $KEYCHAIN_NEW_PASSPHRASE, else a \
                prompt asked twice. scrypt's work factor is $KEYCHAIN_VAULT_WORK_FACTOR, else 18. \
                A team vault becomes a passphrase vault: its recipients' identities no longer \
                open it. Exits 1 when there is no vault.

                  keychain-cli --vault ci/secrets.age vault passwd
                  KEYCHAIN_PASSPHRASE=old KEYCHAIN_NEW_PASSPHRASE=new keychain-cli vault passwd
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Option(
            help: ArgumentHelp(
                "Read the new passphrase from this file (one trailing newline is ignored).", valueName: "path"),
            completion: .file())
        var newPassphraseFile: String?

        @Option(
            name: .customLong("new-passphrase-fd"), parsing: .unconditional,
            help: ArgumentHelp(
                "Read the new passphrase from this open file descriptor, to its end (one trailing newline is ignored).",
                valueName: "n"))
        var newPassphraseFD: Int32?

        func validate() throws {
            try PassphraseInput.validate(
                prefix: "new", file: newPassphraseFile, descriptor: newPassphraseFD,
                vaultDescriptor: settings.passphraseFD)
        }

        func run() throws {
            let source = PassphraseInput(descriptor: newPassphraseFD, file: newPassphraseFile, new: true)
            if let tree = try settings.treeVaultStore(newPassphrase: source) {
                guard try tree.changePassphrase() else {
                    throw CommandFailure.usage(
                        "\(tree.directory) is a team tree vault: its recipients' identities open it, and it has no "
                            + "passphrase to change")
                }
                return warn(
                    "\(tree.directory): its identity (\(TreeVaultStore.identityFile)) is now encrypted to the new passphrase"
                )
            }
            let store = try settings.vaultStore(newPassphrase: source)
            let wasTeamVault = if case .recipients = try store.lock() { true } else { false }
            guard try store.changePassphrase() else {
                throw CommandFailure.notFound(
                    "there is no vault at \(store.path); the first set creates one with a passphrase")
            }
            HolderProcess.forgetRekeyed(store.path)
            warn(
                "\(store.path): re-keyed for the new passphrase"
                    + (wasTeamVault ? "; its recipients' identities no longer open it" : ""))
        }
    }
}
