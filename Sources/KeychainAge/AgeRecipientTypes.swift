import KeychainSystem

/// Recipient types a module above this one adds, which the library does not link: ssh-rsa, whose
/// RSA-OAEP needs libgcrypt (KeychainAgeRSA, which the command line links and registers at start).
/// ``VaultRecipient/init(_:)`` asks them, by the line's first word, before it refuses a key type.
package enum AgeRecipientTypes {
    /// The recipient a line names, as ``VaultRecipient`` keeps it: the key alone (what two
    /// recipients are compared by), the comment, and the recipient; or the error saying why the
    /// line is not one.
    package typealias Parser =
        @Sendable (String) -> Result<(key: String, comment: String, recipient: any AgeRecipient), RecipientError>

    /// A list, not a dictionary: the fast path registers too, and a dictionary type instantiated at
    /// run time scans the binary's protocol conformances.
    private static let parsers = Locked<[(type: String, parser: Parser)]>([])

    /// Makes lines whose first word is `type` (`ssh-rsa`) recipients read by `parser`.
    package static func register(type: String, _ parser: @escaping Parser) {
        parsers.withLock { $0 = $0.filter { $0.type != type } + [(type, parser)] }
    }

    /// Whether stanzas of `type` are read: age's own, a registered type, or one of `identities`'.
    static func isRead(_ type: String, with identities: [any AgeIdentity]) -> Bool {
        AgeFile.recipientTypes.contains(type) || identities.contains { $0.stanzaType == type } || isRegistered(type)
    }

    /// Whether `type` is a registered recipient type.
    static func isRegistered(_ type: String) -> Bool { parsers.withLock { $0.contains { $0.type == type } } }

    /// The recipient `text` names when its first word is a registered type; nil otherwise.
    static func parse(_ text: String) throws(RecipientError) -> (
        key: String, comment: String, recipient: any AgeRecipient
    )? {
        let type = String(text.prefix { $0 != " " && $0 != "\t" })
        guard let parser = parsers.withLock({ $0.first { $0.type == type }?.parser }) else { return nil }
        return try parser(text).get()
    }
}

extension RecipientError {
    /// A line of a registered type that is not a valid recipient, `description` saying why.
    package static func invalid(_ description: String) -> RecipientError { RecipientError(description) }
}

extension AgeFile.Stanza {
    /// A stanza of a recipient type another module adds: `arguments` (its type first) and `body`.
    package init(_ arguments: [String], body: [UInt8]) { self.init(arguments: arguments, body: body) }
}
