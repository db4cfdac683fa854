/// The byte strings that masked output hides for one secret: what GitHub's runner masks for a
/// value (the value, each line of a multi-line value, its base64 at the three byte offsets) and
/// the forms a program prints a value in most often (JSON-escaped, URL-encoded).
///
/// None holds a line break (a multi-line value is hidden line by line), so a masked span never
/// crosses one and output can be written on at every newline. None is shorter than
/// ``minimumLength`` bytes: hiding every `a` would mangle the output and hide nothing.
package enum MaskedForms {
    /// The shortest secret, line or form that is masked, in bytes; and in characters, the
    /// shortest secret (a shorter one is announced as not masked).
    package static let minimumLength = 4

    /// Whether `secret` as a whole is too short to be masked.
    package static func isTooShort(_ secret: [UInt8]) -> Bool {
        (String(validating: secret, as: UTF8.self)?.count ?? secret.count) < minimumLength
    }

    /// Every form of `secret` to hide, without repeats.
    package static func of(_ secret: [UInt8]) -> [[UInt8]] {
        guard !isTooShort(secret) else { return [] }
        let lines = secret.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map { line in
            Array(line.last == UInt8(ascii: "\r") ? line.dropLast() : line)
        }
        var forms: [[UInt8]] = []
        for value in lines.count == 1 ? lines : [secret] + lines {
            forms += [value] + (0...2).map { base64(value.dropFirst($0)) } + jsonForms(of: value) + urlForms(of: value)
        }
        var seen: Set<[UInt8]> = []
        return forms.filter { form in
            form.count >= minimumLength && !form.contains(UInt8(ascii: "\n")) && seen.insert(form).inserted
        }
    }

    /// The base64 characters that `bytes` alone decide wherever they stand in a longer encoded
    /// text whose groups of three start where `bytes` does: the last partial group's character
    /// and the padding depend on what follows, and are left out.
    static func base64(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 4 / 3 + 4)
        var bits: UInt32 = 0
        var count = 0
        for byte in bytes {
            bits = bits << 8 | UInt32(byte)
            count += 8
            while count >= 6 {
                count -= 6
                out.append(alphabet[Int(bits >> UInt32(count) & 63)])
            }
            bits &= (1 << UInt32(count)) - 1
        }
        return out
    }

    /// The value as JSON encoders write it in a string: plain (`"` `\` and control characters
    /// escaped), with `/` as `\/` (PHP), with every non-ASCII character as `\uXXXX` (Python's
    /// default), and with `<` `>` `&` as `\u003c`… (Go's default).
    static func jsonForms(of value: [UInt8]) -> [[UInt8]] {
        guard let text = String(validating: value, as: UTF8.self) else { return [] }
        return [(false, false, false), (true, false, false), (false, true, false), (false, false, true)].map {
            jsonEscaped(text, slash: $0.0, ascii: $0.1, html: $0.2)
        }
    }

    private static func jsonEscaped(_ text: String, slash: Bool, ascii: Bool, html: Bool) -> [UInt8] {
        var out = ""
        func hex(_ unit: UInt16) -> String {
            let digits = String(unit, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "/" where slash: out += "\\/"
            case "<" where html, ">" where html, "&" where html: out += hex(UInt16(scalar.value))
            case _ where scalar.value < 0x20: out += hex(UInt16(scalar.value))
            case _ where ascii && scalar.value > 0x7E: out += String(scalar).utf16.map(hex).joined()
            default: out.unicodeScalars.append(scalar)
            }
        }
        return Array(out.utf8)
    }

    /// The value percent-encoded: every byte but `A-Z a-z 0-9 - . _ ~` (RFC 3986), as
    /// encodeURIComponent does (which keeps `! ' ( ) *`), and as a form does (space as `+`).
    static func urlForms(of value: [UInt8]) -> [[UInt8]] {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        let component = unreserved.union("!'()*".utf8)
        let digits = Array("0123456789ABCDEF".utf8)
        func encoded(keeping kept: Set<UInt8>, plus: Bool) -> [UInt8] {
            value.flatMap { byte -> [UInt8] in
                if kept.contains(byte) { return [byte] }
                if plus && byte == UInt8(ascii: " ") { return [UInt8(ascii: "+")] }
                return [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return [
            encoded(keeping: unreserved, plus: false), encoded(keeping: component, plus: false),
            encoded(keeping: unreserved, plus: true),
        ]
    }
}
