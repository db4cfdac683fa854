import ArgumentParser
import KeychainCore

extension KeychainCLI.Vault {
    struct Sign: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign the vault as it is now, once an allowed signer reviewed it.",
            discussion: """
                Signs, with --signing-key or $KEYCHAIN_SIGNING_KEY (an OpenSSH ed25519 private \
                key, or the .pub of a key an ssh-agent holds), a tree vault's .recipients and \
                every item whose signature is not an allowed signer's (each SERVICE/KEY.age.sig), \
                or a vault file whole (PATH.sig); a tree without an id gets one (.vault-id). It \
                reads no secret, so the signer need not be a recipient. Review what changed first \
                (keychain-cli vault diff, git log -p): a signature says that an allowed signer \
                vouches for the file as it is. With --allowed-signers, the key must be one it lists. \
                After a merge in which both sides changed one item, sign the merged item again. \
                See docs/backends/vault.md, "Signed vaults".

                  keychain-cli --vault secrets --signing-key ~/.ssh/id_ed25519 vault sign
                  SSH_AUTH_SOCK=… keychain-cli --vault secrets --signing-key key.pub vault sign
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        func run() throws {
            let settings = settings
            guard try settings.vaultSigning().signs else {
                throw CommandFailure.usage(
                    "vault sign needs a signing key: --signing-key PATH or $KEYCHAIN_SIGNING_KEY")
            }
            if let tree = try settings.treeVaultStore() {
                let (signed, already) = try tree.signAll()
                return warn(
                    "\(tree.directory): signed \(signed) file\(signed == 1 ? "" : "s")"
                        + (already > 0 ? "; \(already) already signed by an allowed signer" : ""))
            }
            let store = try settings.vaultStore()
            guard try store.signatureReport() != nil else {
                throw CommandFailure.notFound("there is no vault at \(store.path) to sign")
            }
            warn(
                try store.signAll()
                    ? "\(store.path): signed" : "\(store.path): already signed by an allowed signer")
        }
    }
}
