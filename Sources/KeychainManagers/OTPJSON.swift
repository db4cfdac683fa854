import FoundationEssentials
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
    ///   tools differ on which counts) and a comma before a closing bracket.
    static func value(_ text: String, source: String, app: String) throws -> JSONValue {
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw FormatError("\(source) is empty; nothing was stored. Did the export that writes it fail?")
        }
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw FormatError(
                "\(source) is not valid JSON, so not \(app)'s export; nothing was stored. "
                    + "`python3 -m json.tool FILE` names the line at fault")
        }
        if let repeated = RepeatedMember.first(in: text.utf8) {
            throw FormatError(
                "\(source) has the field \(quotedValue(repeated.name, expected: "a field name")) twice in one "
                    + "object; nothing was stored. Keep one")
        }
        if TrailingComma.first(in: text.utf8) != nil {
            throw FormatError(
                "\(source) has a comma right before a closing bracket, which JSON does not allow; nothing was "
                    + "stored. Remove the comma")
        }
        if case .object(let members) = value, members["format"]?.string == ExportDocument.formatName {
            throw FormatError(
                "\(source) is keychain-cli's own export, not \(app)'s; nothing was stored", kind: .ownExportAsOther)
        }
        return value
    }
}

/// The members of one object of an app's JSON, read with messages naming `location` (`FILE:
/// token 3`) and `app` (what writes the file); `what` says what the object should be.
struct JSONMembers {
    let members: [String: JSONValue]
    let location: String
    let app: String

    init(_ value: JSONValue, location: String, app: String, what: String) throws {
        guard case .object(let members) = value else {
            throw FormatError("\(location) is not a JSON object, so not \(what); nothing was stored")
        }
        (self.members, self.location, self.app) = (members, location, app)
    }

    subscript(name: String) -> JSONValue? {
        if case .null = members[name] { return nil }
        return members[name]
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
        guard case .number(let number) = value, number == number.rounded(), abs(number) <= 9_007_199_254_740_992
        else { throw wrong(name, "a whole number") }
        guard range.contains(Int64(number)) else {
            throw FormatError(
                "\(location): '\(name)' is \(Int64(number)), outside \(range.lowerBound)...\(range.upperBound); "
                    + "nothing was stored")
        }
        return Int64(number)
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

    func array(_ name: String) throws -> [JSONValue]? {
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
