import KeychainSystem

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
    public init(_ rawValue: String) throws(KeychainError) {
        try validateName(rawValue, kind: "key")
        self.rawValue = rawValue
    }

    /// The name escaped for a line of text (see ``escapedForDisplay(_:)``).
    public var description: String { escapedForDisplay(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { byteOrder(lhs.rawValue, rhs.rawValue) }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8) }
    public func hash(into hasher: inout Hasher) { hashBytes(rawValue, &hasher) }
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
    public init(_ rawValue: String) throws(KeychainError) {
        try validateName(rawValue, kind: "service")
        self.rawValue = rawValue
    }

    /// The name escaped for a line of text (see ``escapedForDisplay(_:)``).
    public var description: String { escapedForDisplay(rawValue) }
    public static func < (lhs: Self, rhs: Self) -> Bool { byteOrder(lhs.rawValue, rhs.rawValue) }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8) }
    public func hash(into hasher: inout Hasher) { hashBytes(rawValue, &hasher) }
}

// Names are compared byte for byte, as every backend stores them: Swift's String == holds "é"
// (U+00E9) and "e\u{301}" equal, and a keyring, a tree vault's files and OpenBao hold them apart,
// so a dictionary of names would merge two items.

/// Whether `lhs` sorts before `rhs` by their UTF-8 bytes (the order of their code points).
private func byteOrder(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
}

/// Feeds `text`'s UTF-8 bytes to `hasher` in one call where the string holds them contiguously
/// (every native string: a vault's keys are hashed for each of its items), byte by byte otherwise.
private func hashBytes(_ text: String, _ hasher: inout Hasher) {
    let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    if hashed == nil { for byte in text.utf8 { hasher.combine(byte) } }
}

/// The longest key or service name accepted, in UTF-8 bytes: far above what people type, so that
/// any other tool's item (the Secret Service sets no limit) can be read, exported and imported.
public let maximumNameLength = 65_536

/// The largest secret accepted, in bytes (1 MiB). Larger secrets are refused, never truncated.
public let maximumSecretSize = 1 << 20

private func validateName(_ name: String, kind: String) throws(KeychainError) {
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
