import KeychainFormats
import KeychainSystem

/// Reading an authenticator app's JSON: its text, its value, and the members of its objects,
/// each failure a ``FormatError`` that says where and what to do.
enum OTPJSON {
    /// The text of `bytes`: UTF-8 (with or without a byte order mark) or UTF-16 with one.
    /// - Throws: ``FormatError`` for another encoding, saying how to convert it.
    static func text(_ bytes: [UInt8], source: String) throws -> String {
        try ExportText.text(bytes, source: source)
    }

    /// The JSON value of `text`, an export of `app`.
    /// - Throws: ``FormatError`` for what is not JSON, a member given twice in one object (JSON
    ///   tools differ on which counts) and a comma before a closing bracket, naming the line and
    ///   the token (or key slot, or group) it is in.
    static func value(_ text: String, source: String, app: String) throws -> JSONNode {
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw FormatError("\(source) is empty; nothing was stored. Did the export that writes it fail?")
        }
        let value = try JSONReader.document(text[...], source: source, what: "\(app)'s export") {
            // andOTP's list, Aegis's entries, FreeOTP+'s tokens; Aegis's key slots and groups.
            JSONReader.place(
                of: $0, ["": "token", "entries": "token", "tokens": "token", "slots": "key slot", "groups": "group"])
        }
        if value["format"]?.string == ExportDocument.formatName {
            throw FormatError(
                "\(source) is keychain-cli's own export, not \(app)'s; nothing was stored", kind: .ownExportAsOther)
        }
        return value
    }
}

/// The members of one object of an app's JSON, read with messages naming `location` (`FILE:
/// token 3`) and `app` (what writes the file); `what` says what the object should be.
struct JSONMembers {
    let members: [JSONNode.Member]
    let location: String
    let app: String

    init(_ value: JSONNode, location: String, app: String, what: String) throws {
        guard case .object(let members) = value else {
            throw FormatError("\(location) is not a JSON object, so not \(what); nothing was stored")
        }
        (self.members, self.location, self.app) = (members, location, app)
    }

    /// The value of the member `name`; nil when it is absent or null.
    subscript(name: String) -> JSONNode? {
        let value = members.first { $0.name == name }?.value
        if case .null = value { return nil }
        return value
    }

    func missing(_ name: String) -> FormatError {
        FormatError("\(location) has no '\(name)', which \(app) writes; nothing was stored. Export it again")
    }

    func wrong(_ name: String, _ expected: String) -> FormatError {
        FormatError("\(location): '\(name)' should be \(expected) (\(app) writes one); nothing was stored")
    }

    /// The text `name` holds; nil when it is absent or null.
    func string(_ name: String) throws -> String? {
        guard let value = self[name] else { return nil }
        guard case .string(let text) = value else { throw wrong(name, "text") }
        return text
    }

    func requiredString(_ name: String) throws -> String {
        guard let text = try string(name) else { throw missing(name) }
        return text
    }

    /// The whole number `name` holds, within `range`; nil when it is absent or null.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let value = self[name] else { return nil }
        // Its digits exactly; a whole number written otherwise (`6.0`, `1e3`) as before, up to 2^53.
        guard case .number(let digits) = value,
            let number = Int64(digits)
                ?? Double(digits).flatMap({ $0 == $0.rounded() && abs($0) <= 9_007_199_254_740_992 ? Int64($0) : nil })
        else { throw wrong(name, "a whole number") }
        guard range.contains(number) else {
            throw FormatError(
                "\(location): '\(name)' is \(number), outside \(range.lowerBound)...\(range.upperBound); "
                    + "nothing was stored")
        }
        return number
    }

    func requiredInteger(_ name: String, in range: ClosedRange<Int64>) throws -> Int64 {
        guard let number = try integer(name, in: range) else { throw missing(name) }
        return number
    }

    func bool(_ name: String) throws -> Bool? {
        guard let value = self[name] else { return nil }
        guard case .bool(let flag) = value else { throw wrong(name, "true or false") }
        return flag
    }

    func array(_ name: String) throws -> [JSONNode]? {
        guard let value = self[name] else { return nil }
        guard case .array(let elements) = value else { throw wrong(name, "a list") }
        return elements
    }

    /// The texts of the list `name`; empty when it is absent or null.
    func strings(_ name: String) throws -> [String] {
        try (array(name) ?? []).map { element in
            guard case .string(let text) = element else { throw wrong(name, "a list of texts") }
            return text
        }
    }
}
