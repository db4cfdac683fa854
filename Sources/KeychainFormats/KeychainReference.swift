import KeychainSystem

/// A reference to a stored secret: `keychain://SERVICE/KEY`, or `keychain://SERVICE/KEY?field=NAME`
/// for one field of an entry ([`get --field`](EntryFields)).
///
/// Escaping, one rule for every place a reference is written (an environment value, an env file,
/// a template): `%XX` (two hex digits) stands for the byte XX, so any name can be written. In the
/// service, `%`, `/`, `?` and `#` must be escaped (`%25 %2F %3F %23`); in the key and the field,
/// `%`, `?` and `#` must be, and a `/` may stand as it is (a key runs to the end or to `?`), as
/// `inject` always took it. A `%` not followed by two hex digits, an unescaped `#`, an empty
/// service or key, or anything after `?` but one `field=NAME` is malformed: never guessed at.
package struct KeychainReference: Sendable, Hashable {
    package var service: String
    package var key: String
    package var field: String?

    package static let scheme = "keychain://"

    package init(service: String, key: String, field: String? = nil) {
        self.service = service
        self.key = key
        self.field = field
    }

    /// Whether `value` is a reference as a whole, by `op run`'s rule: it starts with the scheme
    /// (a value that only holds one further in is not).
    package static func isReference(_ value: some StringProtocol) -> Bool {
        value.utf8.starts(with: scheme.utf8)
    }

    /// The reference `text` (which starts with the scheme), decoded.
    /// - Throws: ``FormatError`` (a usage error) saying what is wrong, never repeating the text
    ///   (it may be a secret pasted by mistake); the caller names where it was.
    package init(parsing text: some StringProtocol) throws(FormatError) {
        guard Self.isReference(text) else {
            throw FormatError("does not start with keychain://", isUsageError: true)
        }
        let rest = Array(text.utf8.dropFirst(Self.scheme.utf8.count))
        if rest.contains(UInt8(ascii: "#")) {
            throw FormatError("has a # (write %23 for a # in a name)", isUsageError: true)
        }
        let question = rest.firstIndex(of: UInt8(ascii: "?"))
        let path = rest[..<(question ?? rest.endIndex)]
        guard let slash = path.firstIndex(of: UInt8(ascii: "/")), slash > path.startIndex, slash + 1 < path.endIndex
        else {
            throw FormatError("should be keychain://SERVICE/KEY", isUsageError: true)
        }
        service = try Self.decoded(path[..<slash], part: "service")
        key = try Self.decoded(path[(slash + 1)...], part: "key")
        field = nil
        if let question {
            let query = rest[(question + 1)...]
            let prefix = Array("field=".utf8)
            guard query.starts(with: prefix), query.count > prefix.count, !query.contains(UInt8(ascii: "?"))
            else {
                throw FormatError(
                    "takes one ?field=NAME after the key, nothing else (write %3F for a ? in a name)",
                    isUsageError: true)
            }
            field = try Self.decoded(query.dropFirst(prefix.count), part: "field")
        }
    }

    /// The reference as text, escaped so that ``init(parsing:)`` reads it back exactly.
    package var text: String {
        Self.scheme + Self.escaped(service, slash: true) + "/" + Self.escaped(key, slash: false)
            + (field.map { "?field=" + Self.escaped($0, slash: false) } ?? "")
    }

    /// `name` with `%`, `?`, `#`, `&` (and `/` when `slash`), spaces and control characters as `%XX`
    /// (every other byte, those of non-ASCII characters too, as it is).
    private static func escaped(_ name: String, slash: Bool) -> String {
        percentEncoded(name) { byte in
            switch byte {
            case UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "&"), UInt8(ascii: " "), 0x7F,
                0x00...0x1F:
                true
            case UInt8(ascii: "/"): slash
            default: false
            }
        }
    }

    private static func decoded(_ bytes: ArraySlice<UInt8>, part: String) throws(FormatError) -> String {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = hexDigitValue(bytes[index + 1]),
                    let low = hexDigitValue(bytes[index + 2])
                else {
                    throw FormatError(
                        "has a % in its \(part) not followed by two hex digits (write %25 for a %)", isUsageError: true)
                }
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(byte)
                index += 1
            }
        }
        guard !result.isEmpty else { throw FormatError("has an empty \(part)", isUsageError: true) }
        guard let text = String(validating: result, as: UTF8.self) else {
            throw FormatError("has a \(part) whose %XX bytes are not UTF-8", isUsageError: true)
        }
        return text
    }
}
