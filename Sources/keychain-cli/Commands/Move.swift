import ArgumentParser
import KeychainCore

extension KeychainCLI {
    struct Move: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "mv",
            abstract: "Move (rename) a secret, or a whole service, to another key, service or backend.",
            discussion: """
                SRC and DST are as for cp. Within one vault file the move is one write; within \
                a tree vault, under its lock; within an OpenBao service one check-and-set. \
                Otherwise the secret is stored at DST first and removed from SRC after, only if \
                SRC still holds what was copied (a SRC changed meanwhile is carried again). \
                Stopped at any point (even by SIGKILL), the secret is at SRC, at DST or at \
                both, never at neither. The item's label and attributes are kept where both \
                backends keep them, and its dates where DST is a vault. Quiet on \
                success.

                A secret stored at DST is kept and mv exits 73 unless --force. Exits 1 when SRC \
                holds no secret, 64 when SRC and DST are the same item, 75 when SRC kept \
                changing while it was copied and removed (both are then kept).

                  keychain-cli -s ci mv github-token gh-token
                  keychain-cli mv ci/deploy-key prod/deploy-key
                  keychain-cli -s ci mv --service-to ci-old    # rename a service
                  keychain-cli mv -r ci ci --to-backend openbao   # all of ci to OpenBao
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI
        @OptionGroup var options: TransferOptions

        func run() throws {
            try Transfer(moving: true, options: options, settings: settings).run(options.addresses)
        }
    }
}
