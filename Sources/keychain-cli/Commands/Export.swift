import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

/// The formats of `export` and `import`.
enum TransferFormat: String, ExpressibleByArgument, CaseIterable {
    /// `{"format": "keychain-cli-export", "version": 1, "items": [SecretDocument…]}`: every item, exactly.
    case json
    /// `NAME="value"` lines: text secrets of one service, keys turned into variable names.
    case env
}

extension KeychainCLI {
    struct Export: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every secret of the service (or of all services) as JSON or dotenv.",
            discussion: """
                Prints secrets, so it asks first when standard input is a terminal and needs \
                --yes otherwise. JSON keeps every item exactly (binary secrets as base64, with \
                "encoding": "base64"); import reads it back. The env format writes NAME="value" \
                lines for one service, with keys turned into variable names (github-token becomes \
                GITHUB_TOKEN), escapes \\ " $ ` and line ends so that a shell sourcing the file \
                runs nothing, and refuses binary secrets and names that collide. Each service and \
                key is exported once (two tools' items under one name are one secret to get). \
                -o is written so that no interruption leaves a partial or stray copy; a FIFO or \
                terminal there is written into, a directory refused (74), and the vault's own \
                files are refused (64).

                  keychain-cli -s ci export --yes -o ci-secrets.json
                  keychain-cli export --all-services --yes > all.json
                  keychain-cli -s ci export --format env --yes > .env
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Export the items of every service (JSON only).")
        var allServices = false

        @Option(help: "json (default) or env.")
        var format: TransferFormat = .json

        @Option(
            name: [.customShort("o"), .long],
            help: ArgumentHelp(
                "Write to this file (0600, replaced atomically; a FIFO or terminal is written into) instead of stdout.",
                valueName: "path"),
            completion: .file())
        var output: String?

        @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation.")
        var yes = false

        func validate() throws {
            if allServices && format == .env {
                throw ValidationError("--format env holds one service; use --format json with --all-services")
            }
        }

        func run() throws {
            // The refusal comes first: it needs no backend, and says what to do whatever else is wrong.
            if !yes && !isTerminal(STDIN_FILENO) {
                throw CommandFailure.usage(
                    "refusing to export secrets without confirmation (standard input is not a terminal). Pass --yes")
            }
            try settings.checkOutput(output)
            let keychain = try keychain(listing: .keysOnly)
            let items = allServices ? try keychain.itemsOfAllServices() : try keychain.items()
            // One entry per service and key: two tools' items under one name are one secret to
            // get, and an import of the backup restores that one (export → reset → import).
            var addresses: [(service: String, key: String)] = []
            var seen: Swift.Set<String> = []
            for item in items where seen.insert("\(item.service)\u{0}\(item.key)").inserted {
                addresses.append((item.service, item.key))
            }
            let scope = allServices ? "every service" : "service '\(keychain.service)'"
            if !yes {
                guard try confirm("Write \(addresses.count) secret(s) of \(scope) to \(output ?? "standard output")?")
                else {
                    throw CommandFailure(
                        kind: .denied, message: "not confirmed; nothing was exported. Answer y, or pass --yes")
                }
            }
            var valid: [SecretAddress] = []
            for (serviceName, keyName) in addresses {
                do {
                    valid.append(SecretAddress(service: try ServiceName(serviceName), key: try KeychainKey(keyName)))
                } catch {
                    throw CommandFailure.badData(
                        "cannot export the item '\(abbreviated(keyName))' of service '\(abbreviated(serviceName))': "
                            + "\(error.description); nothing was written. Rename or delete it with the tool that wrote it"
                    )
                }
            }
            // All at once (the Secret Service: a few GetSecrets calls); an item deleted since the
            // listing is simply not exported.
            let documents = zip(valid, try keychain.store.secrets(of: valid)).compactMap { address, secret in
                secret.map { SecretDocument(service: address.service, key: address.key, secret: $0) }
            }
            let bytes = format == .json ? try json(documents) : try dotenv(documents)
            try settings.writeResult(to: output) { sink throws(FileError) in try sink.write(bytes) }
        }

        /// A name for a message: escaped, and cut to 100 characters.
        private func abbreviated(_ name: String) -> String {
            let shown = escapedForDisplay(name)
            return shown.count > 100 ? shown.prefix(100) + "…" : shown
        }

        private func json(_ documents: [SecretDocument]) throws -> [UInt8] {
            return Array(try JSONEncoder.sortedKeys(pretty: true).encode(ExportDocument(items: documents))) + [
                UInt8(ascii: "\n")
            ]
        }

        private func dotenv(_ documents: [SecretDocument]) throws -> [UInt8] {
            if let binary = documents.first(where: { $0.encoding != "utf8" }) {
                throw CommandFailure.badData(
                    "the secret '\(escapedForDisplay(binary.key))' is binary and cannot be written as env. "
                        + "Use --format json")
            }
            do {
                return Array(try DotEnv.text(of: documents.map { ($0.key, $0.secret) }).utf8)
            } catch {
                throw CommandFailure.badData("\(error). Use --format json")
            }
        }
    }
}
