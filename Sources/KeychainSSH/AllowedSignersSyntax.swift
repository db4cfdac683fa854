import FoundationEssentials
import Glibc

/// The pieces of an allowed_signers line: fields split at unquoted blanks, the options field,
/// and its timestamps (`YYYYMMDD[HHMM[SS]][Z]`, local time unless Z, as ssh-keygen reads them).
enum AllowedSignersSyntax {
    /// The options of a line: what restricts its key.
    struct Options {
        var namespaces: String?
        var validAfter: Date?
        var validBefore: Date?
    }

    /// The line's fields: split at spaces and tabs outside double quotes (a backslash inside
    /// quotes escapes the next character), quotes kept; no empty field.
    static func tokens(_ line: String) -> [String] {
        split(line) { $0 == " " || $0 == "\t" }.filter { !$0.isEmpty }
    }

    /// `text` split at the characters `isSeparator` accepts outside double quotes (a backslash
    /// inside quotes escapes the next character), quotes kept; empty parts kept.
    private static func split(_ text: String, at isSeparator: (Character) -> Bool) -> [String] {
        var parts: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        for character in text {
            if escaped {
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if !quoted && isSeparator(character) {
                parts.append(current)
                current = ""
                continue
            }
            current.append(character)
        }
        parts.append(current)
        return parts
    }

    /// A field or value without its surrounding quotes and backslash escapes.
    static func unquoted(_ text: String) throws(SSHKeyError) -> String {
        guard text.hasPrefix("\"") else {
            guard !text.contains("\"") else { throw .malformed("a stray quote in \(text)") }
            return text
        }
        var result = ""
        var escaped = false
        var closed = false
        for character in text.dropFirst() {
            guard !closed else { throw .malformed("text after a closing quote in \(text)") }
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                closed = true
            } else {
                result.append(character)
            }
        }
        guard closed else { throw .malformed("an unterminated quote in \(text)") }
        return result
    }

    /// The options field: comma-separated `cert-authority`, `namespaces="…"`, `valid-after="…"`,
    /// `valid-before="…"` (names in any case, each once, values quoted as ssh-keygen requires);
    /// anything else is refused.
    static func options(_ field: String) throws(SSHKeyError) -> Options {
        var options = Options()
        var seen: Set<String> = []
        for option in split(field, at: { $0 == "," }) {
            let (name, value): (String, String?)
            if let equals = option.firstIndex(of: "=") {
                let raw = String(option[option.index(after: equals)...])
                guard raw.hasPrefix("\"") else { throw .malformed("the value of \(option) is not in double quotes") }
                (name, value) = (option[..<equals].lowercased(), try unquoted(raw))
            } else {
                (name, value) = (option.lowercased(), nil)
            }
            guard seen.insert(name).inserted else { throw .malformed("the option \(name) is given twice") }
            switch (name, value) {
            case ("cert-authority", nil): throw .unsupported("cert-authority (certificates are not supported)")
            case ("namespaces", let value?):
                guard !value.isEmpty else { throw .malformed("namespaces is empty") }
                options.namespaces = value
            case ("valid-after", let value?): options.validAfter = try timestamp(value)
            case ("valid-before", let value?): options.validBefore = try timestamp(value)
            case ("cert-authority", _), ("namespaces", nil), ("valid-after", nil), ("valid-before", nil):
                throw .malformed("the option \(name) is misused")
            default: throw .malformed("unknown option \(name.debugDescription)")
            }
        }
        return options
    }

    /// `YYYYMMDD`, `YYYYMMDDHHMM` or `YYYYMMDDHHMMSS`, then an optional `Z` (UTC; else local time).
    static func timestamp(_ text: String) throws(SSHKeyError) -> Date {
        let utc = text.hasSuffix("Z") || text.hasSuffix("z")
        let digits = Array((utc ? text.dropLast() : Substring(text)).utf8)
        guard [8, 12, 14].contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .malformed("the time \(text.debugDescription) is not YYYYMMDD[HHMM[SS]][Z]")
        }
        func number(_ from: Int, _ count: Int) -> Int32 {
            digits[from..<(from + count)].reduce(0) { $0 * 10 + Int32($1 - 0x30) }
        }
        var fields = tm()
        fields.tm_year = number(0, 4) - 1900
        fields.tm_mon = number(4, 2) - 1
        fields.tm_mday = number(6, 2)
        fields.tm_hour = digits.count > 8 ? number(8, 2) : 0
        fields.tm_min = digits.count > 8 ? number(10, 2) : 0
        fields.tm_sec = digits.count > 12 ? number(12, 2) : 0
        fields.tm_isdst = -1
        let expected = (fields.tm_year, fields.tm_mon, fields.tm_mday, fields.tm_hour, fields.tm_min, fields.tm_sec)
        let seconds = utc ? timegm(&fields) : mktime(&fields)
        guard seconds != -1,
            expected == (fields.tm_year, fields.tm_mon, fields.tm_mday, fields.tm_hour, fields.tm_min, fields.tm_sec)
        else { throw .malformed("the time \(text.debugDescription) is not a date") }
        return Date(timeIntervalSince1970: Double(seconds))
    }
}

/// OpenSSH's patterns (ssh_config's PATTERNS): '*' matches any run of characters, '?' any one;
/// a pattern-list is comma-separated, and a matching "!" pattern refuses whatever else matches.
enum SSHPatterns {
    /// What a pattern-list says of a text: a pattern matches, none does, or a "!" pattern refuses it.
    enum Outcome { case match, none, refused }

    static func matchList(_ text: String, _ list: String) -> Outcome {
        var outcome = Outcome.none
        for pattern in list.split(separator: ",", omittingEmptySubsequences: true) {
            let negated = pattern.hasPrefix("!")
            guard match(Array(text.utf8)[...], Array((negated ? pattern.dropFirst() : pattern).utf8)[...]) else {
                continue
            }
            if negated { return .refused }
            outcome = .match
        }
        return outcome
    }

    /// Whether `text` matches the glob `pattern`, byte by byte.
    static func match(_ text: ArraySlice<UInt8>, _ pattern: ArraySlice<UInt8>) -> Bool {
        var (t, p) = (text.startIndex, pattern.startIndex)
        var star: (pattern: Int, text: Int)?
        while t < text.endIndex {
            if p < pattern.endIndex && (pattern[p] == UInt8(ascii: "?") || pattern[p] == text[t]) {
                t += 1
                p += 1
            } else if p < pattern.endIndex && pattern[p] == UInt8(ascii: "*") {
                star = (p, t)
                p += 1
            } else if let last = star {
                p = last.pattern + 1
                t = last.text + 1
                star = (last.pattern, last.text + 1)
            } else {
                return false
            }
        }
        while p < pattern.endIndex && pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.endIndex
    }
}
