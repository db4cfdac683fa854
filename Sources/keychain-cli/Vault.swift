import ArgumentParser

extension KeychainCLI {
    struct Vault: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage age identities for vaults (team vaults).",
            discussion: """
                A vault encrypted to age recipients (X25519 public keys, age1…) opens with the \
                identity of any of them: --identity PATH or $KEYCHAIN_IDENTITY, as age -i reads \
                it. Writes keep the vault's recipients: every holder still opens the new version.

                  keychain-cli vault keygen -o ~/.config/keychain-cli/identity.txt
                  keychain-cli -s ci export --yes | age -r age1… -o ci/secrets.age
                  KEYCHAIN_IDENTITY=~/.config/keychain-cli/identity.txt \\
                      keychain-cli --vault ci/secrets.age -s ci get github-token
                """,
            subcommands: [Keygen.self])
    }
}
