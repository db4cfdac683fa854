/// The byte strings that masked output hides for one secret: what GitHub's runner masks for a
/// value (the value, each line of a multi-line value, its base64 at the three byte offsets) and
/// the forms a program prints a value in most often (JSON-escaped and URL-encoded, in the
/// spellings common encoders use).
///
/// None is shorter than ``minimumLength`` bytes: hiding every `a` would mangle the output and
/// hide nothing. A multi-line value is hidden whole and line by line, so that a line printed on
/// its own is hidden too (where it is that long).
package enum MaskedForms {
    /// The shortest secret, line or form that is masked, in bytes; and in Unicode scalars, the
    /// shortest secret (a shorter one is announced as not masked).
    package static let minimumLength = 4

    /// Whether `secret` as a whole is too short to be masked.
    package static func isTooShort(_ secret: [UInt8]) -> Bool {
        (String(validating: secret, as: UTF8.self)?.unicodeScalars.count ?? secret.count) < minimumLength
    }

    /// The lines of `secret` (LF or CRLF ends), empty ones left out.
    package static func lines(of secret: [UInt8]) -> [[UInt8]] {
        secret.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).map { line in
            Array(line.last == UInt8(ascii: "\r") ? line.dropLast() : line)
        }.filter { !$0.isEmpty }
    }

    /// Whether some line of a multi-line `secret` is too short to be hidden on its own.
    package static func hasShortLines(_ secret: [UInt8]) -> Bool {
        let lines = lines(of: secret)
        return lines.count > 1 && lines.contains { $0.count < minimumLength }
    }

    /// Every form of `secret` to hide, without repeats.
    package static func of(_ secret: [UInt8]) -> [[UInt8]] {
        guard !isTooShort(secret) else { return [] }
        let lines = lines(of: secret)
        var forms: [[UInt8]] = (0...2).flatMap { wrapped(base64(secret.dropFirst($0))) }
        for value in lines.count > 1 || lines.first != secret ? [secret] + lines : lines {
            forms += [value] + (0...2).map { base64(value.dropFirst($0)) } + jsonForms(of: value) + urlForms(of: value)
        }
        var seen: Set<[UInt8]> = []
        return forms.filter { form in form.count >= minimumLength && seen.insert(form).inserted }
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

    /// `encoded` (base64) as a wrapping encoder writes it across lines, wherever in a line it
    /// starts: at 76 columns (`base64`, Python's `encodebytes`, MIME) and at 64 (PEM, `openssl
    /// base64`). Lines start at a group of four, so it starts at a column that is a multiple of 4;
    /// only the spellings that do cross a line end are new.
    static func wrapped(_ encoded: [UInt8]) -> [[UInt8]] {
        [76, 64].flatMap { width in
            stride(from: 0, to: width, by: 4).compactMap { column -> [UInt8]? in
                guard encoded.count > width - column else { return nil }
                var form = Array(encoded.prefix(width - column))
                for start in stride(from: width - column, to: encoded.count, by: width) {
                    form += [UInt8(ascii: "\n")] + encoded[start..<min(encoded.count, start + width)]
                }
                return form
            }
        }
    }

    /// The value as JSON encoders write it in a string: `"` `\` and control characters escaped,
    /// and any mix of `/` as `\/` (PHP), every non-ASCII character as `\uXXXX` (Python's and
    /// PHP's default), `<` `>` `&` as `\u003c`… (Go's default), with hex digits in lower or upper
    /// case (.NET, Jackson).
    static func jsonForms(of value: [UInt8]) -> [[UInt8]] {
        guard let text = String(validating: value, as: UTF8.self) else { return [] }
        return (0..<16).map { bits in
            jsonEscaped(text, slash: bits & 1 != 0, ascii: bits & 2 != 0, html: bits & 4 != 0, upper: bits & 8 != 0)
        }
    }

    private static func jsonEscaped(_ text: String, slash: Bool, ascii: Bool, html: Bool, upper: Bool) -> [UInt8] {
        var out = ""
        func hex(_ unit: UInt16) -> String {
            let digits = String(unit, radix: 16, uppercase: upper)
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

    /// The value percent-encoded: every byte but `A-Z a-z 0-9 - . _ ~` (RFC 3986), or also
    /// keeping `! ' ( ) *` (encodeURIComponent) or `/` (Python's quote), with a space as `%20` or
    /// `+` (a form), in upper- or lower-case hex (curl writes lower).
    static func urlForms(of value: [UInt8]) -> [[UInt8]] {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        let keeping = [unreserved, unreserved.union("!'()*".utf8), unreserved.union("/".utf8)]
        let spellings = [
            ("0123456789ABCDEF", false), ("0123456789ABCDEF", true), ("0123456789abcdef", false),
            ("0123456789abcdef", true),
        ]
        return keeping.flatMap { kept in
            spellings.map { digits, plus in
                let digits = Array(digits.utf8)
                return value.flatMap { byte -> [UInt8] in
                    if kept.contains(byte) { return [byte] }
                    if plus && byte == UInt8(ascii: " ") { return [UInt8(ascii: "+")] }
                    return [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
                }
            }
        }
    }
}
