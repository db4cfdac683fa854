import ArgumentParser
import KeychainCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The formats of `export` and `import`.
enum TransferFormat: String, ExpressibleByArgument, CaseIterable {
    /// `{"format": "keychain-cli-export", "version": 1, "items": [SecretDocument…]}`: every item, exactly.
    case json
    /// `NAME="value"` lines: text secrets of one service, keys turned into variable names.
    case env
}

/// The JSON document of `export --format json`.
struct ExportDocument: Codable {
    static let formatName = "keychain-cli-export"
    var format = Self.formatName
    var version = 1
    var items: [SecretDocument]
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
                GITHUB_TOKEN), and refuses binary secrets and names that collide.

                  keychain-cli -s ci export --yes -o ci-secrets.json
                  keychain-cli export --all-services --yes > all.json
                  keychain-cli -s ci export --format env --yes > .env
                """)

        @OptionGroup var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Export the items of every service (JSON only).")
        var allServices = false

        @Option(help: "json (default) or env.")
        var format: TransferFormat = .json

        @Option(
            name: [.customShort("o"), .long],
            help: ArgumentHelp("Write to this file (0600, replaced atomically) instead of stdout.", valueName: "path"))
        var output: String?

        @Flag(name: [.customShort("y"), .long], help: "Do not ask for confirmation.")
        var yes = false

        func validate() throws {
            if allServices && format == .env {
                throw ValidationError("--format env holds one service; use --format json with --all-services")
            }
        }

        func run() throws {
            let keychain = try keychain(listing: .keysOnly)
            let items = allServices ? try keychain.itemsOfAllServices() : try keychain.items()
            let scope = allServices ? "every service" : "service '\(keychain.service)'"
            if !yes {
                guard isTerminal(STDIN_FILENO) else {
                    throw CommandFailure.usage(
                        "refusing to export the secrets of \(scope) without confirmation. Pass --yes")
                }
                guard try confirm("Write \(items.count) secret(s) of \(scope) to \(output ?? "standard output")?")
                else {
                    writeError("keychain-cli: nothing was exported.\n")
                    return
                }
            }
            var documents: [SecretDocument] = []
            for item in items {
                let service = try ServiceName(item.service)
                let key = try KeychainKey(item.key)
                // An item deleted since the listing is simply not exported.
                guard let secret = try Keychain(service: service, store: keychain.store).data(for: key) else {
                    continue
                }
                documents.append(SecretDocument(service: service, key: key, secret: secret))
            }
            let bytes = format == .json ? try json(documents) : try dotenv(documents)
            if let output {
                try writeFileAtomically(output, bytes)
            } else {
                try writeOutput(bytes)
            }
        }

        private func json(_ documents: [SecretDocument]) throws -> [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            return Array(try encoder.encode(ExportDocument(items: documents))) + [UInt8(ascii: "\n")]
        }

        private func dotenv(_ documents: [SecretDocument]) throws -> [UInt8] {
            var owners: [String: String] = [:]
            var text = ""
            for document in documents {
                guard document.encoding == "utf8" else {
                    throw CommandFailure.badData(
                        "the secret '\(document.key)' is binary and cannot be written as env. Use --format json")
                }
                let name = DotEnv.variableName(for: document.key)
                if let owner = owners.updateValue(document.key, forKey: name) {
                    throw CommandFailure.badData(
                        "the keys '\(owner)' and '\(document.key)' both become \(name). Use --format json")
                }
                text += "\(name)=\(DotEnv.quoted(document.secret))\n"
            }
            return Array(text.utf8)
        }
    }
}

/// The dotenv dialect of export and import: NAME="value" with \\ \" \n \r \t \$ escapes.
enum DotEnv {
    /// `github-token` → `GITHUB_TOKEN`: letters and digits upper-cased, anything else `_`,
    /// and `_` before a leading digit.
    static func variableName(for key: String) -> String {
        var name = String(
            key.unicodeScalars.map { scalar -> Character in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
                    ? Character(String(scalar).uppercased()) : "_"
            })
        if let first = name.first, first.isNumber { name = "_" + name }
        return name
    }

    static func quoted(_ value: String) -> String {
        var result = "\""
        for character in value {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "$": result += "\\$"
            default: result.append(character)
            }
        }
        return result + "\""
    }

    /// The (name, value) pairs of a dotenv text: `NAME=value`, `NAME="quoted"`, `NAME='literal'`,
    /// an optional `export ` before, blank lines and `#` comments.
    /// - Throws: ``CommandFailure`` (bad data) naming `source`, the line and the reason.
    static func parse(_ text: String, source: String) throws -> [(name: String, value: String, line: Int)] {
        var pairs: [(name: String, value: String, line: Int)] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let location = "\(source):\(index + 1)"
            var line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).trimmingSpaces() }
            guard let equals = line.firstIndex(of: "=") else {
                throw CommandFailure.badData("\(location): expected NAME=value")
            }
            let name = String(line[..<equals])
            guard EnvironmentMapping.isValidName(name) else {
                throw CommandFailure.badData("\(location): '\(name)' is not a valid variable name")
            }
            let raw = line[line.index(after: equals)...]
            pairs.append((name, try value(raw, at: location), index + 1))
        }
        return pairs
    }

    private static func value(_ raw: Substring, at location: String) throws -> String {
        guard let quote = raw.first, quote == "\"" || quote == "'" else { return String(raw) }
        guard raw.count >= 2, raw.last == quote else {
            throw CommandFailure.badData("\(location): the value's closing \(quote) is missing")
        }
        let body = raw.dropFirst().dropLast()
        if quote == "'" { return String(body) }
        var result = ""
        var escaped = false
        for character in body {
            if escaped {
                switch character {
                case "n": result += "\n"
                case "r": result += "\r"
                case "t": result += "\t"
                case "\\", "\"", "$": result.append(character)
                default:
                    throw CommandFailure.badData("\(location): unknown escape \\\(character)")
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                result.append(character)
            }
        }
        if escaped { throw CommandFailure.badData("\(location): the value ends in a lone \\") }
        return result
    }
}
