import FoundationEssentials
import KeychainSystem

/// Any JSON value, for the fields of a KV secret (other tools may store numbers, lists, objects).
enum JSONValue: Codable, Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
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

    func encode(to encoder: any Encoder) throws {
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
    var jsonText: String {
        return (try? JSONEncoder.sortedKeys().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}

/// How a secret is kept in a KV field: text (valid UTF-8) as a plain JSON string, which
/// `bao kv get -field=KEY` prints as it is; other bytes as `{"keychain-cli:base64": "…"}`.
/// A field another tool wrote as a number, boolean, list or object reads as its JSON text.
enum KVValue {
    static let binaryMarker = "keychain-cli:base64"

    static func encode(_ secret: Data) -> JSONValue {
        if let text = String(validating: secret, as: UTF8.self) { return .string(text) }
        return .object([binaryMarker: .string(secret.base64EncodedString())])
    }

    static func decode(_ value: JSONValue) -> Data {
        switch value {
        case .string(let text):
            return Data(text.utf8)
        case .object(let object) where object.count == 1:
            if case .string(let base64) = object[binaryMarker], let bytes = Data(base64Encoded: base64) {
                return bytes
            }
            return Data(value.jsonText.utf8)
        default:
            return Data(value.jsonText.utf8)
        }
    }
}
