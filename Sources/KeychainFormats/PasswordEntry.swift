import FoundationEssentials
import KeychainSystem

/// An entry of a password manager as `import --format bitwarden|pass|…` stores it: one secret, a
/// text in the layout pass keeps its entries in, which gopass, browserpass, pass-otp and
/// pass-import read and write too:
///
///     the password
///     username: alice
///     url: https://example.com/login
///     otpauth://totp/example?secret=JBSWY3DPEHPK3PXP
///     a custom field: its value
///     previous password: the one before
///
///     The notes, as they are, after the first empty line.
///
/// The password is the first line, so it is what `get` prints first, and `get --field password`
/// prints it alone. A value with a line break is written as a JSON string (`"line one\nline
/// two"`), and so is a field name with one or with a `:`, so that every field reads back exactly;
/// a text that starts with `"` is written as it is, unless it reads as such a JSON string itself.
/// An entry with a password only is the password alone.
package struct PasswordEntry: Equatable, Sendable {
    package struct Field: Equatable, Sendable {
        package var name: String
        package var value: String

        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Its folders, outermost first, and its title: the key is these joined by `/`.
    package var path: [String]
    package var password: String
    /// `username`, `url` (once per URL), then the source's other fields, in its order.
    package var fields: [Field]
    /// The TOTP: a seed as an `otpauth://` URI (`otp KEY` reads it from the text), or, when the
    /// source holds one that is no seed `otp` computes (a Steam code), its text as the source had
    /// it, written as the field `otp` (`get KEY --field otp` prints it).
    package var totp: String?
    package var notes: String

    package init(path: [String], password: String, fields: [Field] = [], totp: String? = nil, notes: String = "") {
        self.path = path
        self.password = password
        self.fields = fields
        self.totp = totp
        self.notes = notes
    }

    /// The key it is stored under: its path joined by `/`, empty parts left out.
    package var key: String { path.filter { !$0.isEmpty }.joined(separator: "/") }

    /// The secret stored: the layout above.
    package var text: String {
        var lines = [EntryFields.quotedIfNeeded(password, name: false)]
        for field in fields {
            lines.append(
                EntryFields.quotedIfNeeded(field.name, name: true) + ": "
                    + EntryFields.quotedIfNeeded(field.value, name: false))
        }
        if let totp {
            lines.append(
                OTPSeed.uri(totp, label: "") == totp
                    ? EntryFields.quotedIfNeeded(totp, name: false)
                    : "otp: " + EntryFields.quotedIfNeeded(totp, name: false))
        }
        if !notes.isEmpty { lines += ["", notes] }
        return lines.joined(separator: "\n")
    }

    /// Sets ``totp`` from a source's TOTP `text`: a seed (`otpauth://` URI or base32) as a URI
    /// labelled `label`, anything else as it is; an empty text sets nothing.
    package mutating func setTOTP(_ text: String, label: String) {
        guard !text.isEmpty else { return }
        totp = OTPSeed.uri(text, label: label) ?? text
    }

    /// The entry with each field's name made unique and readable by `get --field`: a name that
    /// `password`, `notes` or `otp` is, or that an earlier field has (whatever the case), gets
    /// ` (2)`, ` (3)`… after it (so a second URL is `url (2)`).
    package func withReadableFieldNames() -> PasswordEntry {
        var copy = self
        var taken: Set<String> = ["password", "notes", "otp"]
        for index in copy.fields.indices {
            let name = copy.fields[index].name
            var unique = name
            var number = 2
            while taken.contains(unique.lowercased()) {
                unique = "\(name) (\(number))"
                number += 1
            }
            taken.insert(unique.lowercased())
            copy.fields[index].name = unique
        }
        return copy
    }
}

/// Reading fields back from an entry's text (``PasswordEntry``'s layout, or any pass entry).
package enum EntryFields {
    /// The value of the field `name` of `text`: `password`, its first line; `notes`, what follows
    /// its first empty line; `otp`, its first `otpauth://` line (anywhere, as pass-otp finds it),
    /// else the value of an `otp: ` line (a TOTP that is no seed, kept as the source had it);
    /// any other name, the value of the first `name: value` line before the first empty line,
    /// the name compared without regard to case. A value (or password) written as a JSON string
    /// is read back as the string it holds. Nil when there is no such field.
    package static func value(of name: String, in text: String) -> String? {
        let lines = self.lines(of: text)
        let body = lines.dropFirst().prefix { !$0.isEmpty }
        switch name.lowercased() {
        case "password":
            return lines.first.map { unquoted($0) }
        case "notes":
            guard lines.count > body.count + 2 else { return nil }
            return String(text[lines[body.count + 2].startIndex...])  // as it is, CRLF and all
        case "otp":
            return lines.first { $0.hasPrefix("otpauth://") }.map(String.init)
                ?? body.lazy.compactMap(split).first { $0.name.lowercased() == "otp" }?.value
        default:
            return body.lazy.compactMap(split).first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// Every line of `text` between the password and the first empty line, in order: a
    /// `name: value` line as its field, any other line (an `otpauth://` line, free text) as it
    /// is with a nil name.
    package static func body(of text: String) -> [(name: String?, value: String)] {
        lines(of: text).dropFirst().prefix { !$0.isEmpty }.map { line in
            split(line).map { ($0.name, $0.value) } ?? (nil, String(line))
        }
    }

    /// The names of the `name: value` lines of `text` before its first empty line, in order.
    package static func names(in text: String) -> [String] {
        lines(of: text).dropFirst().prefix { !$0.isEmpty }.compactMap { split($0)?.name }
    }

    /// The lines of `text`, split at LF and CRLF.
    private static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
    }

    /// A `name: value` line's name and value (either may be a JSON string).
    private static func split(_ line: Substring) -> (name: String, value: String)? {
        if startsWithQuote(line), let (name, rest) = jsonPrefix(line), rest.utf8.starts(with: ": ".utf8),
            needsQuotes(name, name: true)
        {
            return (name, unquoted(Substring(rest.utf8.dropFirst(2))))
        }
        // By bytes: a combining mark after the space makes ": " no two Characters of the line.
        let bytes = line.utf8
        guard
            let colon = bytes.indices.first(where: {
                bytes[$0] == UInt8(ascii: ":") && bytes.index(after: $0) < bytes.endIndex
                    && bytes[bytes.index(after: $0)] == UInt8(ascii: " ")
            })
        else {
            return bytes.last == UInt8(ascii: ":") ? (String(Substring(bytes.dropLast())), "") : nil
        }
        return (String(Substring(bytes[..<colon])), unquoted(Substring(bytes[bytes.index(colon, offsetBy: 2)...])))
    }

    /// `text` as the layout writes it: as it is, or as a JSON string where it must be one (it has a
    /// line break; a name: a `:`, or it is empty; or it reads as such a JSON string itself).
    package static func quotedIfNeeded(_ text: String, name: Bool = false) -> String {
        needsQuotes(text, name: name) ? JSONNode.quoted(text) : text
    }

    /// Whether `text` is written as a JSON string. A text that merely starts with `"` is not
    /// (a pass entry whose password is `"hunter2"`, quotes included, reads as it is), unless it
    /// is itself a JSON string of a text that would be.
    private static func needsQuotes(_ text: String, name: Bool) -> Bool {
        if text.contains(where: \.isNewline) || (name && (text.isEmpty || text.contains(":"))) { return true }
        guard startsWithQuote(Substring(text)), let (value, rest) = jsonPrefix(Substring(text)), rest.isEmpty else {
            return false
        }
        return needsQuotes(value, name: name)
    }

    /// `text` itself, or the string it holds when it is the JSON string the layout writes for a
    /// text that needs one (see ``quotedIfNeeded(_:name:)``).
    private static func unquoted(_ text: Substring, name: Bool = false) -> String {
        guard startsWithQuote(text), let (value, rest) = jsonPrefix(text), rest.isEmpty, needsQuotes(value, name: name)
        else { return String(text) }
        return value
    }

    /// Whether `text`'s first byte is `"` (a `"` followed by a combining mark is one Character).
    private static func startsWithQuote(_ text: Substring) -> Bool { text.utf8.first == UInt8(ascii: "\"") }

    /// The JSON string `text` starts with, and what follows it.
    private static func jsonPrefix(_ text: Substring) -> (String, Substring)? {
        let bytes = text.utf8
        var index = bytes.index(after: bytes.startIndex)
        var escaped = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if escaped {
                escaped = false
            } else if byte == UInt8(ascii: "\\") {
                escaped = true
            } else if byte == UInt8(ascii: "\"") {
                let end = bytes.index(after: index)
                guard let value = try? JSONDecoder().decode(String.self, from: Data(bytes[..<end])) else { return nil }
                return (value, Substring(bytes[end...]))
            }
            index = bytes.index(after: index)
        }
        return nil
    }
}

/// A field of another password manager's JSON as text, exactly: a string as it is, a boolean as
/// `true` or `false`, a number as it is written, and with `objects` a list or an object as its
/// JSON (members in the file's order, numbers as written); nil for null or nothing.
/// - Throws: `refuse()` for a list or an object without `objects`.
func exactText(_ value: JSONNode?, objects: Bool, refuse: () -> FormatError) throws -> String? {
    switch value {
    case .array?, .object?: if !objects { throw refuse() }
    default: break
    }
    return value?.text
}
