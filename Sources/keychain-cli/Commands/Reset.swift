import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Reset: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove every secret of the service, and of no other service.",
            discussion: """
                Removes exactly the items list shows (service and username attributes, any tool's), \
                nothing else. Asks for confirmation, with that count, when standard input is a \
                terminal; otherwise needs --yes. Prints how many secrets were removed.

                  keychain-cli -s ci reset --yes
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation.")
        var yes = false

        func run() throws {
            let keychain = try keychain()
            let service = keychain.service.description  // escaped for the terminal
            if !yes {
                guard isTerminal(STDIN_FILENO) else {
                    throw CommandFailure.usage(
                        "refusing to delete every secret of service '\(service)' without confirmation. Pass --yes")
                }
                let count = try keychain.items().count
                guard count > 0 else {
                    try writeOutput(Array("removed 0 secrets of service '\(service)'\n".utf8))
                    return
                }
                guard try confirm("Delete all \(count) secret(s) of service '\(service)'?") else {
                    throw CommandFailure(
                        kind: .denied, message: "not confirmed; nothing was deleted. Answer y, or pass --yes")
                }
            }
            let removed = try keychain.reset()
            try writeOutput(Array("removed \(removed) secret\(removed == 1 ? "" : "s") of service '\(service)'\n".utf8))
        }
    }
}
