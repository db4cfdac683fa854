import ArgumentParser

extension KeychainCLI {
    struct Vault: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Team and tree vaults: age identities, recipients, the passphrase, git merges and diffs.",
            discussion: """
                A team vault is encrypted to age recipients instead of a passphrase: X25519 public \
                keys (age1…), ssh-ed25519 and ssh-rsa public keys. Each holder opens it with \
                their own identity, --identity PATH or $KEYCHAIN_IDENTITY (an age identity file, \
                or an OpenSSH ed25519 or RSA private key; a passphrase-protected key's \
                passphrase from $KEYCHAIN_KEY_PASSPHRASE, else asked on the terminal, only when a \
                vault encrypted to it is opened; keychain-cli unlock asks it once), or \
                --identity-fd N / $KEYCHAIN_IDENTITY_FD. No scrypt runs: a read takes milliseconds. The vault's \
                document lists its recipients, so that every write (set, delete, import) \
                re-encrypts to the same ones and whoever holds the vault can change them; adding \
                or removing a recipient, or changing the passphrase, re-keys the vault (a new \
                file key), so a removed recipient cannot open this version or later ones (older \
                copies, in git history say, stay readable to them: rotate the secrets they knew).

                A tree vault (vault init DIR) keeps one age file per secret for git: vault \
                git-setup lets git merge and diff its items (merge-driver, textconv), and vault \
                diff says what changed, each value shown only as a keyed fingerprint.

                A signed vault (--signing-key, vault sign) carries an OpenSSH signature beside \
                each file; with --require-signed and --allowed-signers nothing an allowed signer \
                did not sign is used (vault verify reports each file).

                  keychain-cli vault keygen -o ~/.config/keychain-cli/identity.txt
                  keychain-cli vault recipients add age1… ~/.ssh/id_ed25519.pub
                  KEYCHAIN_IDENTITY=~/.config/keychain-cli/identity.txt \\
                      keychain-cli --vault ci/secrets.age -s ci get github-token
                  keychain-cli --vault ci/secrets.age vault recipients remove age1…
                  keychain-cli --vault ci/secrets.age vault passwd
                """,
            subcommands: [
                Init.self, Keygen.self, Recipients.self, Passwd.self, Sign.self, Verify.self, GitSetup.self, Diff.self,
                MergeDriver.self, Textconv.self,
            ])

        func run() throws {
            throw missingCommand(Self.self, arguments: Array(CommandLine.arguments.dropFirst()))
        }
    }
}
