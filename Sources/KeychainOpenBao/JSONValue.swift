import FoundationEssentials
import KeychainSystem

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
