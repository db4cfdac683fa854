import ArgumentParser
import KeychainCore

extension KeychainCLI {
    struct Copy: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "cp",
            abstract: "Copy a secret (or a whole service) to another key, service or backend.",
            discussion: """
                SRC and DST are each KEY (of the service -s), SERVICE/KEY (split at the first \
                '/', as exec's mappings are) or keychain://SERVICE/KEY. The copy keeps the \
                item's label and attributes where both backends keep them, and its dates where \
                DST is a vault; its fields travel in its text. With --to-backend (and --to-vault, --to-passphrase-file, \
                --to-identity…), DST is on another backend or vault. Quiet on success.

                A secret stored at DST is kept and cp exits 73 unless --force. Exits 1 when SRC \
                holds no secret, 64 when SRC and DST are the same item.

                  keychain-cli -s ci cp github-token github-token-old
                  keychain-cli cp ci/github-token staging/github-token
                  keychain-cli -s ci cp token token --to-vault team.age
                  keychain-cli cp -r ci ci-backup       # every item of a service
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI
        @OptionGroup var options: TransferOptions

        func run() throws {
            try Transfer(moving: false, options: options, settings: settings).run(options.addresses)
        }
    }
}
