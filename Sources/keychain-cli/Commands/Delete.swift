import ArgumentParser
import KeychainCore

extension KeychainCLI {
    struct Delete: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the secret stored under KEY.",
            discussion: """
                Removes every item of the service stored under KEY, by any tool. Exits 1 when \
                there is none, unless --ignore-missing.

                  keychain-cli delete github-token
                  keychain-cli -s ci delete old-token --ignore-missing
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the secret.", completion: .keyNames)
        var key: String

        @Flag(help: "Exit 0 when there is no such secret.")
        var ignoreMissing = false

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            if try !keychain.delete(key) && !ignoreMissing {
                throw KeychainError.notFound(service: keychain.service.rawValue, key: key.rawValue)
            }
        }
    }
}
