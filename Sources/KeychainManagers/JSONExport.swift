import KeychainFormats

/// Password managers' JSON exports as ``PasswordEntry``s.
package enum JSONExport {
    /// Whose JSON it is.
    package enum Kind: String, CaseIterable, Sendable {
        case dashlane
        case enpass
        /// Proton Pass's `data.json` (in its zip, or alone).
        case protonpass
        /// 1Password's `.1pif` (1Password Interchange Format).
        case onePasswordInterchange = "1pif"
    }

    /// Every entry of `input`, a JSON export of `kind`.
    /// - Throws: ``FormatError`` naming the item and what is wrong, never a value.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        throw FormatError("\(input.source): \(kind.rawValue) JSON is not read yet; nothing was stored")
    }
}
