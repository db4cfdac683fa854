import Crypto
import FoundationEssentials

// The encodings every part of an age header uses.
extension AgeFile {
    /// age's base64: the standard alphabet without padding, and only the canonical encoding.
    static func base64(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().prefix { $0 != "=" })
    }

    static func decodeBase64(_ text: String) -> [UInt8]? {
        guard !text.contains("=") else { return nil }
        let padded = text + String(repeating: "=", count: (4 - text.count % 4) % 4)
        guard let data = Data(base64Encoded: padded), base64(Array(data)) == text else { return nil }
        return Array(data)
    }

    /// A stanza body: lines of 64 columns, the last one shorter (possibly empty).
    static func wrappedLines(_ text: String) -> String {
        var lines = ""
        var rest = Substring(text)
        while rest.count >= 64 {
            lines += rest.prefix(64) + "\n"
            rest = rest.dropFirst(64)
        }
        return lines + rest + "\n"
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).bytes
    }
}

extension SymmetricKey {
    var bytes: [UInt8] { withUnsafeBytes { Array($0) } }
}
