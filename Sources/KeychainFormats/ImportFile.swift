import FoundationEssentials
import KeychainStore
import KeychainSystem

/// The JSON document of `export --format json`: every item exactly (binary secrets as base64).
package struct ExportDocument: Codable, Sendable {
    package static let formatName = "keychain-cli-export"
    package var format = Self.formatName
    package var version = 1
    package var items: [VaultDocument.Item]

    package init(items: [VaultDocument.Item]) {
        self.items = items
    }
}

/// `SERVICE/KEY` for a message, or only what it looks like when a part of it looks like a secret
/// (an item whose key and secret fields were swapped).
package func shownItem(_ service: ServiceName, _ key: KeychainKey) -> String {
    let name = "\(service.rawValue)/\(key.rawValue)"
    if let kind = secretKind(inAnyPartOf: name) { return "an item named with \(kind) (not shown)" }
    return escapedForDisplay(name)
}

/// What `import` reads: an export document, a vault's plaintext, or dotenv lines.
package enum ImportFile {
    /// Every item of an export file (JSON, or dotenv lines for `defaultService`), validated, with
    /// an entry given twice with the same secret kept once.
    /// - Parameter json: the format, or nil to judge by the content ({ or [ first means JSON).
    /// - Throws: ``FormatError`` for the first problem, naming the line or item and the reason.
    package static func items(of text: String, source: String, json: Bool?, defaultService: ServiceName)
        throws -> [SecretToStore]
    {
        // Judged scalar by scalar, after a byte order mark and white space: a JSON document starts
        // with { (an export) or [ (refused below with its own message, not read as dotenv).
        let start = text.unicodeScalars.first { !$0.properties.isWhitespace && $0 != "\u{FEFF}" }
        let isJSON = json ?? (start == "{" || start == "[")
        // Nothing at all is most often a command before the pipe that failed (export | import).
        guard start != nil else {
            throw FormatError("\(source) is empty; nothing was stored. Did the command that writes it fail?")
        }
        var items: [SecretToStore] = []
        if isJSON {
            if start == "[" {
                // Only JSON is called JSON: a file that merely starts with [ (an INI section, a
                // log line) is said to be what it is not.
                do {
                    _ = try JSONReader.parse(text.first == "\u{FEFF}" ? text.dropFirst() : text[...])
                } catch let failure {
                    throw FormatError(
                        "\(source) is not valid JSON (it starts with [ but does not parse: line \(failure.line), "
                            + "\(failure.reason)), and an export document is a JSON object; nothing was stored. "
                            + "`python3 -m json.tool FILE` shows the place")
                }
                throw FormatError(
                    "\(source) is a JSON array; an export document is an object: "
                        + "{\"format\": \"keychain-cli-export\", \"version\": 1, \"items\": [...]}")
            }
            let document: ExportDocument
            do {
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .iso8601  // a vault's document has dates
                let json = text.unicodeScalars.first == "\u{FEFF}" ? Data(text.utf8.dropFirst(3)) : Data(text.utf8)
                document = try decoder.decode(ExportDocument.self, from: json)
            } catch let error as DecodingError {
                throw FormatError("\(source) is not a keychain-cli export document: \(describe(error))")
            } catch {
                throw FormatError("\(source) is not a keychain-cli export document")
            }
            try refuseWhatToolsReadOtherwise(text, source: source)
            // An export, or a vault's plaintext (age --decrypt vault.age | keychain-cli import).
            guard VaultDocument.formats.contains(document.format), document.version == 1 else {
                throw FormatError(
                    "\(source): format \(quotedValue(document.format, expected: "a format")) version \(document.version) "
                        + "is not one this version reads (keychain-cli-export or a vault's document, version 1). "
                        + "Export it again with this version, or read it with the version that wrote it"
                )
            }
            for (index, entry) in document.items.enumerated() {
                let location = "\(source): item \(index + 1)"
                guard ["utf8", "base64"].contains(entry.encoding) else {
                    throw FormatError(
                        "\(location): the encoding \(quotedValue(entry.encoding, expected: "an encoding")) is not one this version reads "
                            + "(utf8 or base64)")
                }
                guard let secret = entry.bytes else {
                    throw FormatError("\(location): the secret does not decode as \(entry.encoding)")
                }
                items.append(try item(entry.service, entry.key, secret, at: location))
            }
        } else {
            for pair in try DotEnv.parse(text, source: source) {
                items.append(
                    try item(
                        defaultService.rawValue, pair.name, Data(pair.value.utf8), at: "\(source):\(pair.line)"))
            }
        }
        // The same item twice with the same secret (a backup of two tools' items under one
        // name) is one item; two different secrets under one name are refused.
        var unique: [SecretToStore] = []
        var first: [SecretAddress: Int] = [:]  // by bytes: "é" and "e\u{301}" are two items
        for (index, item) in items.enumerated() {
            let address = SecretAddress(service: item.service, key: item.key)
            guard let earlier = first[address] else {
                first[address] = index
                unique.append(item)
                continue
            }
            if items[earlier].secret != item.secret {
                throw FormatError(
                    "\(source): \(shownItem(item.service, item.key)) appears twice with different secrets "
                        + "(entries \(earlier + 1) and \(index + 1)); nothing was stored. Keep the one you want")
            }
        }
        return unique
    }

    /// Refuses what the decoder read but JSON tools read otherwise or refuse (JSONReader is
    /// strict): a member given twice (Foundation's decoder takes the first, python and jq the
    /// last), a comma right before a closing bracket; each named by its line and item.
    private static func refuseWhatToolsReadOtherwise(_ text: String, source: String) throws {
        do {
            _ = try JSONReader.parse(text.first == "\u{FEFF}" ? text.dropFirst() : text[...])
        } catch let failure {
            let at = "\(source), line \(failure.line)"
            let place = JSONReader.place(of: Array(failure.path.prefix(2)), ["items": "item"]) ?? "the document"
            if let name = failure.repeated {
                throw FormatError(
                    "\(at): \(place) has the field \(quotedValue(name, expected: "a field name")) twice; nothing was "
                        + "stored. JSON tools differ on which one counts (python and jq read the last): keep one")
            }
            if failure.isTrailingComma {
                throw FormatError(
                    "\(at): \(place) has a comma right before a closing bracket, which JSON does not allow "
                        + "(python3 -m json.tool and jq refuse it); nothing was stored. Remove the comma")
            }
            throw FormatError(
                "\(source) is not valid JSON (line \(failure.line): \(failure.reason)); nothing was stored. "
                    + "`python3 -m json.tool FILE` shows the place")
        }
    }

    /// What is wrong in a JSON document, by item number and field, for people rather than
    /// Swift's coding paths.
    private static func describe(_ error: DecodingError) -> String {
        func place(_ path: [any CodingKey]) -> String {
            var words: [String] = []
            for key in path {
                if let index = key.intValue {
                    words.append("item \(index + 1)")
                } else if key.stringValue != "items" {
                    words.append("field '\(key.stringValue)'")
                }
            }
            return words.isEmpty ? "the document" : words.joined(separator: ", ")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let holder = place(context.codingPath)
            return "\(holder == "the document" ? "it" : holder) has no field '\(key.stringValue)'"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            let expected = type == String.self ? "text" : type == Int.self ? "a whole number" : "\(type)"
            return "\(place(context.codingPath)) should be \(expected)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty
                ? "it is not valid JSON. `python3 -m json.tool FILE` or `jq . FILE` names the line at fault"
                : "\(place(context.codingPath)) is not valid (\(context.debugDescription))"
        @unknown default:
            return "it does not have the shape of one"
        }
    }

    /// The items of another password manager's entries, each a key (its path) and a secret,
    /// stored under `service`: the second entry of a key is stored under the key with ` (2)`
    /// after it, the third with ` (3)`… (a number an entry of the source holds as its own key is
    /// passed over), never merged with it. The numbers depend on the source alone, so that an
    /// import run again finds its items where the first run put them (skipped, or replaced with
    /// --overwrite), as for any other key.
    /// - Returns: the items, and for each renamed entry its key and the key it is stored under.
    /// - Throws: ``FormatError`` for an entry that cannot be stored (naming it by `location`).
    package static func items(
        ofEntries entries: [(key: String, secret: Data)], service: ServiceName, location: (Int) -> String
    ) throws -> (items: [SecretToStore], renamed: [(key: String, storedAs: String)]) {
        let (keys, renamed) = try keys(of: entries.map(\.key), location: location)
        var items: [SecretToStore] = []
        for (index, entry) in entries.enumerated() {
            items.append(try item(service.rawValue, keys[index].rawValue, entry.secret, at: location(index)))
        }
        return (items, renamed)
    }

    /// The keys entries of the keys `entries` are stored under, as ``items(ofEntries:service:location:)``
    /// numbers them: what an export read twice (a row at a time) decides before its first write.
    /// - Throws: ``FormatError`` for a key that cannot be stored (naming it by `location`).
    package static func keys(of entries: [String], location: (Int) -> String) throws
        -> (keys: [KeychainKey], renamed: [(key: String, storedAs: String)])
    {
        // Whether each key is taken, and whether by an entry already numbered (true) or only by
        // a later one (false). By bytes: "é" and "e\u{301}" are two names, which Swift's String
        // calls equal. The keys share the entries' storage.
        var taken = [KeyBytes: Bool](minimumCapacity: entries.count)
        for entry in entries { taken[KeyBytes(entry.isEmpty ? "untitled" : entry)] = false }
        var keys: [KeychainKey] = []
        keys.reserveCapacity(entries.count)
        var renamed: [(key: String, storedAs: String)] = []
        // The number each key's next copy tries first: 100,000 entries of one title count up once.
        var next: [KeyBytes: Int] = [:]
        for (index, entry) in entries.enumerated() {
            var key = entry.isEmpty ? "untitled" : entry
            if taken.updateValue(true, forKey: KeyBytes(key)) == true {
                var number = next[KeyBytes(key), default: 2]
                while taken[KeyBytes("\(key) (\(number))")] != nil { number += 1 }
                next[KeyBytes(key)] = number + 1
                renamed.append((key, "\(key) (\(number))"))
                key = "\(key) (\(number))"
                taken[KeyBytes(key)] = true
            }
            do throws(KeychainError) {
                keys.append(try KeychainKey(key))
            } catch {
                throw refusal(error, at: location(index))
            }
        }
        return (keys, renamed)
    }

    private static func item(_ service: String, _ key: String, _ secret: Data, at location: @autoclosure () -> String)
        throws
        -> SecretToStore
    {
        do {
            guard secret.count <= maximumSecretSize else {
                throw KeychainError.secretTooLarge(limit: maximumSecretSize)
            }
            return SecretToStore(service: try ServiceName(service), key: try KeychainKey(key), secret: secret)
        } catch let error as KeychainError {
            throw refusal(error, at: location())
        }
    }
}

extension ImportFile {
    /// Why the item at `location` cannot be stored, and that nothing was: a name the store
    /// refuses (a NUL, a control character) is changed where it comes from.
    package static func refusal(_ error: KeychainError, at location: String) -> FormatError {
        guard case .invalidName = error else { return FormatError("\(location): \(error.description)") }
        return FormatError(
            "\(location): \(error.description); nothing was stored. Rename it where it comes from, and import again")
    }
}

/// A key compared and hashed by its UTF-8 bytes, not as Swift compares strings.
private struct KeyBytes: Hashable {
    let text: String

    init(_ text: String) { self.text = text }

    static func == (left: KeyBytes, right: KeyBytes) -> Bool { left.text.utf8.elementsEqual(right.text.utf8) }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
