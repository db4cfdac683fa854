/// RFC 4648 base32, as TOTP seeds are written: any case, spaces and hyphens between groups
/// ignored, `=` padding optional (at the end only).
package enum Base32 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// `bytes` in base32, upper case, without `=` padding (as otpauth URIs have it).
    package static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var bits: UInt32 = 0
        var count = 0
        for byte in bytes {
            bits = bits << 8 | UInt32(byte)
            count += 8
            while count >= 5 {
                count -= 5
                output.append(alphabet[Int((bits >> UInt32(count)) & 31)])
            }
            bits &= (1 << UInt32(count)) - 1
        }
        if count > 0 { output.append(alphabet[Int((bits << UInt32(5 - count)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of the base32 `text` (any case; spaces, hyphens and `=` padding at the end
    /// ignored); nil when it holds another character.
    package static func decode(_ text: String) -> [UInt8]? {
        var bits: UInt32 = 0
        var count = 0
        var output: [UInt8] = []
        var padding = false
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a")
            case UInt8(ascii: "2")...UInt8(ascii: "7"): value = byte - UInt8(ascii: "2") + 26
            case UInt8(ascii: " "), UInt8(ascii: "-"): continue
            case UInt8(ascii: "="):
                padding = true
                continue
            default: return nil
            }
            guard !padding else { return nil }
            bits = bits << 5 | UInt32(value)
            count += 5
            if count >= 8 {
                count -= 8
                output.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
                bits &= (1 << UInt32(count)) - 1
            }
        }
        return output
    }
}
