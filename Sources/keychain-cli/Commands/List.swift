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

                Names are printed so that one line is one item and nothing reaches the terminal \
                raw: a backslash is doubled, tab, newline and carriage return print as \\t, \\n \
                and \\r, and other control characters, U+2028, U+2029 and the bidi controls as \
                \\u{XXXX}. --json and -0 give names exactly.

                  keychain-cli -s ci list
                  keychain-cli list --all-services --json
                  keychain-cli list -0 | xargs -0 -n1 keychain-cli delete --
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "List the items of every service.")
        var allServices = false

        @Flag(help: "Print a JSON array of item metadata.")
        var json = false

        @Flag(
            name: [.customShort("0"), .customLong("null")],
            help:
                "End each name with a NUL byte instead of a newline, unescaped (with --all-services: SERVICE NUL KEY NUL)."
        )
        var null = false

        func validate() throws {
            if json && null { throw ValidationError("choose one of --json and -0") }
        }

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
                if null {
                    text += allServices ? "\(item.service)\u{0}\(item.key)\u{0}" : "\(item.key)\u{0}"
                } else {
                    let key = escapedForDisplay(item.key)
                    text += allServices ? "\(escapedForDisplay(item.service))\t\(key)\n" : "\(key)\n"
                }
            }
            try writeOutput(Array(text.utf8))
        }
    }
}
