import FoundationEssentials

extension JSONEncoder {
    /// The JSON this project writes everywhere: keys sorted (the same value, the same bytes), `/`
    /// unescaped, dates in ISO 8601; indented when `pretty` (files and listings people read).
    package static func sortedKeys(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }
}

/// Any JSON value: the fields of a KV secret (other tools may store numbers, lists, objects).
/// Other programs' exports are read with KeychainFormats' JSONReader instead, which keeps an
/// object's order and a number as written.
package enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as compact JSON text with sorted keys (what a non-string field reads as).
    package var jsonText: String {
        return (try? JSONEncoder.sortedKeys().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }

    /// The string, or nil for any other kind of value.
    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The members of an object, or nil for any other kind of value.
    package var object: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The elements of an array, or nil for any other kind of value.
    package var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// A field's text: a string as it is, null as nil, any other value as its JSON text.
    package var text: String? {
        switch self {
        case .null: nil
        case .string(let value): value
        case .number(let value) where value == value.rounded() && abs(value) < 1e15: String(Int64(value))
        default: jsonText
        }
    }
}
