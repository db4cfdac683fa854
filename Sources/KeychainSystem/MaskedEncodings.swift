/// The encodings of one value that masked output hides besides the value itself: each of GitHub's
/// runner's value encoders (its `ValueEncoders`: base64 at three byte offsets, JSON, URI data,
/// XML, the expression and command-line escapes, a value's inside of double quotes, PowerShell's
/// two halves at `&`), and the spellings other common encoders choose for JSON and URLs.
enum MaskedEncodings {
    /// Every plain (not base64) form of `value`, with repeats.
    static func escaped(_ value: [UInt8]) -> [[UInt8]] { labelledEscaped(value).map(\.form) }

    /// ``escaped(_:)``, each form with the name of its encoding (what `scan` reports): `json`,
    /// `url`, `xml`, `escaped` (an expression's or a command line's quotes doubled or escaped),
    /// `unquoted` (the inside of a quoted value), `part` (a PowerShell half).
    static func labelledEscaped(_ value: [UInt8]) -> [(kind: String, form: [UInt8])] {
        var forms = jsonForms(of: value).map { ("json", $0) } + urlForms(of: value).map { ("url", $0) }
        guard let text = String(validating: value, as: UTF8.self) else { return forms }
        forms += [
            // XML as .NET's SecurityElement writes it, an expression's string, a command line's.
            ("xml", replacing(value, ["<": "&lt;", ">": "&gt;", "&": "&amp;", "\"": "&quot;", "'": "&apos;"])),
            ("escaped", replacing(value, ["'": "''"])), ("escaped", replacing(value, ["\"": "\\\""])),
        ]
        // The runner's TrimDoubleQuotes: the inside of a "quoted" value of more than 8 UTF-16 units.
        if text.utf16.count > 8 && text.hasPrefix("\"") && text.hasSuffix("\"") {
            forms.append(("unquoted", Array(value.dropFirst().dropLast())))
        }
        forms += powerShellHalves(text).map { ("part", Array($0.utf8)) }
        return forms
    }

    /// The base64 forms of `value` at the three byte offsets: the characters its bytes alone
    /// decide wherever it stands in a longer encoded text, and the whole encoding with its
    /// padding as the runner masks it (the value encoded alone).
    static func base64Forms(of value: [UInt8]) -> [[UInt8]] {
        (0...2).flatMap { shift in
            let bytes = value.count > shift ? value.dropFirst(shift) : value[...]
            return [base64(bytes), base64(bytes, padded: true)]
        }
    }

    /// `bytes` in base64: without `padded`, only the characters that `bytes` alone decide
    /// wherever they stand in a longer encoded text whose groups of three start where `bytes`
    /// does (the last partial group's character and the padding depend on what follows).
    static func base64(_ bytes: ArraySlice<UInt8>, padded: Bool = false) -> [UInt8] {
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
        if padded && count > 0 {
            out.append(alphabet[Int(bits << UInt32(6 - count) & 63)])
            out += Array(repeating: UInt8(ascii: "="), count: count == 2 ? 2 : 1)
        }
        return out
    }

    /// The value as JSON encoders write it in a string: `"` `\` and control characters escaped,
    /// and any mix of `/` as `\/` (PHP), every non-ASCII character as `\uXXXX` (Python's and
    /// PHP's default), `<` `>` `&` as `\u003c`… (Go's default), `"` `'` `+` `` ` `` as `\u0022`…
    /// (.NET's System.Text.Json), U+0085, U+2028 and U+2029 as `\u2028`… (Newtonsoft's, the
    /// runner's), with hex digits in lower or upper case. Only the choices the value's characters
    /// make a difference for are combined.
    static func jsonForms(of value: [UInt8]) -> [[UInt8]] {
        guard let text = String(validating: value, as: UTF8.self) else { return [] }
        let scalars = text.unicodeScalars
        var options: [JSONOption] = []
        if scalars.contains("/") { options.append(.slash) }
        if scalars.contains(where: { $0.value > 0x7E }) { options.append(.ascii) }
        if scalars.contains(where: { "<>&".unicodeScalars.contains($0) }) { options.append(.html) }
        if scalars.contains(where: { "\"'+`".unicodeScalars.contains($0) }) { options.append(.dotNet) }
        if scalars.contains(where: { [0x85, 0x2028, 0x2029].contains($0.value) }) { options.append(.separators) }
        if !options.isEmpty || scalars.contains(where: { $0.value < 0x20 }) { options.append(.upper) }
        return (0..<(1 << options.count)).map { bits in
            jsonEscaped(text, options.indices.filter { bits & 1 << $0 != 0 }.reduce([]) { $0.union(options[$1]) })
        }
    }

    private struct JSONOption: OptionSet {
        let rawValue: Int
        static let slash = JSONOption(rawValue: 1)
        static let ascii = JSONOption(rawValue: 2)
        static let html = JSONOption(rawValue: 4)
        static let dotNet = JSONOption(rawValue: 8)
        static let separators = JSONOption(rawValue: 16)
        static let upper = JSONOption(rawValue: 32)
    }

    private static func jsonEscaped(_ text: String, _ options: JSONOption) -> [UInt8] {
        var out = ""
        func hex(_ unit: UInt16) -> String {
            let digits = String(unit, radix: 16, uppercase: options.contains(.upper))
            return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case _ where options.contains(.dotNet) && "\"'+`".unicodeScalars.contains(scalar):
                out += hex(UInt16(scalar.value))
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "/" where options.contains(.slash): out += "\\/"
            case _ where options.contains(.html) && "<>&".unicodeScalars.contains(scalar):
                out += hex(UInt16(scalar.value))
            case _ where scalar.value < 0x20: out += hex(UInt16(scalar.value))
            case _ where options.contains(.ascii) && scalar.value > 0x7E: out += String(scalar).utf16.map(hex).joined()
            case _ where options.contains(.separators) && [0x85, 0x2028, 0x2029].contains(scalar.value):
                out += hex(UInt16(scalar.value))
            default: out.unicodeScalars.append(scalar)
            }
        }
        return Array(out.utf8)
    }

    /// The value percent-encoded: every byte but `A-Z a-z 0-9 - . _ ~` (RFC 3986, .NET's
    /// `EscapeDataString` as the runner encodes), or also keeping `! ' ( ) *` (JavaScript's
    /// encodeURIComponent) or `/` (Python's quote), or keeping `A-Z a-z 0-9 - . _ *` only (a form
    /// as URLSearchParams and Java's URLEncoder write it, `~` as `%7E`), with a space as `%20` or
    /// `+`, in upper- or lower-case hex (curl writes lower).
    static func urlForms(of value: [UInt8]) -> [[UInt8]] {
        guard value.contains(where: { !keptInURLs[0][Int($0)] }) else { return [] }
        let spaces = value.contains(UInt8(ascii: " "))
        return keptInURLs.dropFirst().flatMap { kept in
            [
                ("0123456789ABCDEF", false), ("0123456789ABCDEF", true), ("0123456789abcdef", false),
                ("0123456789abcdef", true),
            ]
            .filter { spaces || !$0.1 }.map { digits, plus in
                let digits = Array(digits.utf8)
                var form: [UInt8] = []
                form.reserveCapacity(value.count * 3)
                for byte in value {
                    if kept[Int(byte)] {
                        form.append(byte)
                    } else if plus && byte == UInt8(ascii: " ") {
                        form.append(UInt8(ascii: "+"))
                    } else {
                        form += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
                    }
                }
                return form
            }
        }
    }

    /// The bytes each spelling of ``urlForms(of:)`` keeps, as tables of 256: alphanumerics alone
    /// first (the bytes every spelling keeps).
    private static let keptInURLs: [[Bool]] = {
        let alphanumeric = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let unreserved = alphanumeric.union("-._~".utf8)
        return [
            alphanumeric, unreserved, unreserved.union("!'()*".utf8), unreserved.union("/".utf8),
            alphanumeric.union("-._*".utf8),
        ]
        .map { kept in (0..<256).map { kept.contains(UInt8($0)) } }
    }()

    /// `value` with each ASCII character `replacements` names written as its replacement.
    private static func replacing(_ value: [UInt8], _ replacements: [Unicode.Scalar: String]) -> [UInt8] {
        let table = Dictionary(uniqueKeysWithValues: replacements.map { (UInt8($0.key.value), Array($0.value.utf8)) })
        guard value.contains(where: { table[$0] != nil }) else { return value }
        return value.flatMap { table[$0] ?? [$0] }
    }

    /// The runner's two PowerShell encoders: the value up to its last `&` (or through its first
    /// `&+`), and what follows it (after `&+` and one more character), each kept where it is at
    /// least 6 UTF-16 units long.
    private static func powerShellHalves(_ text: String) -> [String] {
        let units = Array(text.utf16)
        let ampersand = UInt16(UInt8(ascii: "&"))
        guard let last = units.lastIndex(of: ampersand) else { return [] }
        let plus = units.indices.first { $0 + 1 < units.count && units[$0] == ampersand && units[$0 + 1] == 0x2B }
        let before = plus.map { units[..<($0 + 2)] } ?? units[...last]
        let after: ArraySlice<UInt16> =
            plus.map { units.count > $0 + 3 ? units[($0 + 3)...] : [] } ?? units[(last + 1)...]
        return [before, after].filter { $0.count >= 6 }.map { String(decoding: $0, as: UTF16.self) }
    }
}
