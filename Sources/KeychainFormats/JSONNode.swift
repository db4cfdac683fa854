/// A JSON value as a password manager's export holds it: each object's members in the file's
/// order (a field's place among its item's is kept), each number as it is written (an export's
/// `0.10` or `12345678901234567890` read back exactly, never through a double).
package indirect enum JSONNode: Equatable, Sendable {
    /// A member of an object: its name, escapes decoded, and its value.
    package struct Member: Equatable, Sendable {
        package var name: String
        package var value: JSONNode

        package init(name: String, value: JSONNode) {
            self.name = name
            self.value = value
        }
    }

    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([JSONNode])
    case object([Member])

    /// The value of the first member `name` of an object; nil for other values or no such member.
    package subscript(_ name: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// The text of a string; nil for other values.
    package var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The members of an object in the file's order; nil for other values.
    package var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements of a list; nil for other values.
    package var elements: [JSONNode]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// A number's value as a double, rounded as a double rounds it (for a comparison or an order,
    /// never for text); nil for other values.
    package var double: Double? {
        if case .number(let digits) = self { return Double(digits) }
        return nil
    }

    /// A scalar's text exactly (a number as written, `true`/`false`), a list's or an object's
    /// compact JSON; nil for null.
    package var text: String? {
        switch self {
        case .null: return nil
        case .bool(let flag): return flag ? "true" : "false"
        case .number(let digits): return digits
        case .string(let text): return text
        case .array, .object: return json
        }
    }

    /// Whether it is true, or a number other than 0 (Enpass's flags are 0 and 1).
    package var isSet: Bool {
        switch self {
        case .bool(let flag): return flag
        case .number(let digits): return Double(digits).map { $0 != 0 } ?? false
        default: return false
        }
    }

    /// The value as compact JSON, members in their order.
    package var json: String {
        switch self {
        case .null: return "null"
        case .bool, .number: return text!
        case .string(let text): return Self.quoted(text)
        case .array(let elements): return "[" + elements.map(\.json).joined(separator: ",") + "]"
        case .object(let members):
            return "{" + members.map { Self.quoted($0.name) + ":" + $0.value.json }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal of `text`, byte for byte as JSONEncoder writes one (without escaping
    /// slashes): what an entry's quoted values (``EntryFields``) are written as too.
    package static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{8}": out += "\\b"
            case "\u{C}": out += "\\f"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
