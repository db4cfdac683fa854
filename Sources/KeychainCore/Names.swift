/// The name of a secret inside a service: the `KEY` of `keychain-cli get KEY`, stored as the
/// Secret Service attribute `username`.
///
/// It cannot be built invalid: non-empty text without NUL, at most ``maximumNameLength`` UTF-8
/// bytes. Any other text is accepted, control characters included, as the Secret Service and
/// python keyring accept it, so that every other tool's item can be addressed; output that puts
/// names on lines escapes them (``escapedForDisplay(_:)``).
public struct KeychainKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The validated name.
    public let rawValue: String

    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when `rawValue` cannot name an item.
    public init(_ rawValue: String) throws {
        try validateName(rawValue, kind: "key")
        self.rawValue = rawValue
    }

    /// The name escaped for a line of text (see ``escapedForDisplay(_:)``).
    public var description: String { escapedForDisplay(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A namespace of keys, stored as the Secret Service attribute `service`.
///
/// Same rules as ``KeychainKey``.
public struct ServiceName: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The service used when neither `--service` nor `KEYCHAIN_SERVICE` names one.
    public static let defaultName = "keychain-cli"

    /// The validated name.
    public let rawValue: String

    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when `rawValue` cannot name a service.
    public init(_ rawValue: String) throws {
        try validateName(rawValue, kind: "service")
        self.rawValue = rawValue
    }

    /// The name escaped for a line of text (see ``escapedForDisplay(_:)``).
    public var description: String { escapedForDisplay(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The longest key or service name accepted, in UTF-8 bytes: far above what people type, so that
/// any other tool's item (the Secret Service sets no limit) can be read, exported and imported.
public let maximumNameLength = 65_536

private func validateName(_ name: String, kind: String) throws {
    if name.isEmpty {
        throw KeychainError.invalidName(kind: kind, reason: "the \(kind) name is empty")
    }
    if name.utf8.count > maximumNameLength {
        throw KeychainError.invalidName(
            kind: kind, reason: "the \(kind) name is longer than \(maximumNameLength) bytes")
    }
    // D-Bus strings cannot hold NUL, nor can C strings: such a name could not be stored or read back.
    if name.utf8.contains(0) {
        throw KeychainError.invalidName(kind: kind, reason: "the \(kind) name contains a NUL character")
    }
}

/// `text` made safe for one line of a terminal or a line-oriented listing: a backslash becomes
/// `\\`, tab, newline and carriage return become `\t`, `\n` and `\r`, and every other control
/// character (C0, DEL, C1), the line and paragraph separators U+2028 and U+2029, and the bidi
/// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, which reorder what a terminal
/// shows) become `\u{XXXX}`. Other text is unchanged, so ordinary names print as they are.
public func escapedForDisplay(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": result += "\\\\"
        case "\t": result += "\\t"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case _ where needsEscape(scalar):
            let hex = String(scalar.value, radix: 16, uppercase: true)
            result += "\\u{" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "}"
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x5C, 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E,
        0x2066...0x2069:
        true
    default: false
    }
}
