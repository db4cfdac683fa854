import ArgumentParser
import KeychainCore

extension KeychainCLI {
    struct List: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the keys of the service, sorted; never secrets.",
            discussion: """
                One key per line. With --all-services, one "SERVICE<TAB>KEY" per line for every \
                item any tool stored with service and username attributes. --json prints the \
                metadata: service, key, label, application, created, modified.

                  keychain-cli -s ci list
                  keychain-cli list --all-services --json
                """)

        @OptionGroup var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "List the items of every service.")
        var allServices = false

        @Flag(help: "Print a JSON array of item metadata.")
        var json = false

        func run() throws {
            // Plain output needs only each item's attributes, which the keyring serves faster.
            let keychain = try keychain(listing: json ? .full : .keysOnly)
            let items = allServices ? try keychain.itemsOfAllServices() : try keychain.items()
            if json {
                try writeJSON(items)
                return
            }
            var text = ""
            for item in items {
                text += allServices ? "\(item.service)\t\(item.key)\n" : "\(item.key)\n"
            }
            try writeOutput(Array(text.utf8))
        }
    }
}
