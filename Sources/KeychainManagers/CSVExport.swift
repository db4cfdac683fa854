import KeychainFormats

/// Password managers' CSV exports as ``PasswordEntry``s.
package enum CSVExport {
    /// Whose CSV it is: each manager names and orders its columns its own way.
    package enum Kind: String, CaseIterable, Sendable {
        /// Chrome, Edge, Brave, Opera and Vivaldi (name,url,username,password,note).
        case chrome
        case firefox
        /// Safari and Apple Passwords.
        case safari
        case lastpass
        case keeper
        case nordpass
        /// Bitwarden's CSV, personal and organisation.
        case bitwarden
        /// 1Password 4, 7 and 8's CSV exports.
        case onePassword = "1password"
        /// KeePass 2's and KeePassXC's CSV.
        case keepass
        case dashlane
        case enpass
        case protonpass
    }

    /// Every entry of `input`, a CSV export of `kind`.
    /// - Throws: ``FormatError`` naming the line and what is wrong, never a value.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        throw FormatError("\(input.source): --format \(kind.rawValue) does not read CSV yet; nothing was stored")
    }
}
