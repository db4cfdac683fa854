/// A text input that cannot be read: what is wrong and where ("FILE:LINE: reason"), and whether
/// it is a usage mistake (an env file or template the user wrote, 64) or bad data (an import
/// file, 65); an encrypted export's wrong password is ``Kind/wrongPassword`` (77).
package struct FormatError: Error, CustomStringConvertible {
    package var description: String
    package var isUsageError: Bool
    /// Which mistake it is, where a caller has more to say about what to do next.
    package var kind: Kind

    package enum Kind: Sendable, Equatable {
        /// A mapping given a quoted value, as a file of values (a .env, an export) has them.
        case valueInMapping
        /// This library's own export document, given as another program's export.
        case ownExportAsOther
        /// An encrypted export the password given does not open (77, as a wrong passphrase).
        case wrongPassword
        case other
    }

    package init(_ description: String, isUsageError: Bool = false, kind: Kind = .other) {
        self.description = description
        self.isUsageError = isUsageError
        self.kind = kind
    }
}
