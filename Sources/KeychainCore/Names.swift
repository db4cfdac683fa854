/// The name of a secret inside a service: the `KEY` of `keychain-cli get KEY`, stored as the
/// Secret Service attribute `username`.
///
/// It cannot be built invalid: non-empty, at most ``maximumNameLength`` UTF-8 bytes, and no
/// control characters (they would break line-oriented `list` output and terminals).
public struct KeychainKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The validated name.
    public let rawValue: String

    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when `rawValue` cannot name an item.
    public init(_ rawValue: String) throws {
        try validateName(rawValue, kind: "key")
        self.rawValue = rawValue
    }

    public var description: String { rawValue }
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

    public var description: String { rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The longest key or service name accepted, in UTF-8 bytes.
public let maximumNameLength = 1024

private func validateName(_ name: String, kind: String) throws {
    if name.isEmpty {
        throw KeychainError.invalidName(kind: kind, reason: "the \(kind) name is empty")
    }
    if name.utf8.count > maximumNameLength {
        throw KeychainError.invalidName(
            kind: kind, reason: "the \(kind) name is longer than \(maximumNameLength) bytes")
    }
    if let bad = name.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
        let hex = String(bad.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        throw KeychainError.invalidName(
            kind: kind, reason: "the \(kind) name contains the control character \(code)")
    }
}
