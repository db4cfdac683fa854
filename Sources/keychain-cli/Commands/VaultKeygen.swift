import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new age identity (X25519) and print its recipient.",
            discussion: """
                Writes the identity file as age-keygen does (a "# public key:" comment, then the \
                AGE-SECRET-KEY-1 line), mode 0600, written atomically (missing directories are made, \
                0700); an existing file is never replaced. Prints the recipient (age1…) on standard \
                output: give it to whoever encrypts vaults for you. age -d -i opens what is \
                encrypted to it, and so does keychain-cli with --identity.
                """)

        @Option(
            name: [.customShort("o"), .long], help: ArgumentHelp("The identity file to write.", valueName: "path"),
            completion: .file())
        var output: String

        func run() throws {
            guard access(output, F_OK) != 0 else {
                throw CommandFailure.usage("'\(output)' exists: keygen never replaces an identity. Choose another path")
            }
            let identity = VaultIdentity()
            guard let secretKeyLine = identity.secretKeyLine else { throw CommandFailure.io("no X25519 identity made") }
            let created = Date().formatted(Date.ISO8601FormatStyle())
            let text = "# created: \(created)\n# public key: \(identity.recipient)\n\(secretKeyLine)\n"
            do {
                // A missing directory is made (0700), as the vault's own is on its first write.
                try makeDirectories(splitPath(output).directory)
                try writeFileAtomically(output, Array(text.utf8), replacing: false)
            } catch  where error.code == EEXIST {
                throw CommandFailure.usage("'\(output)' exists: keygen never replaces an identity. Choose another path")
            } catch {
                throw CommandFailure.io("\(error). Check the path and its permissions")
            }
            try writeOutput(Array("\(identity.recipient)\n".utf8))
        }
    }
}
