import KeychainFormats

/// Authenticator apps' exports: each token an entry whose `otp` works.
package enum OTPExport {
    /// Which app wrote it.
    package enum Kind: String, CaseIterable, Sendable {
        /// Aegis's JSON, plain or password-encrypted.
        case aegis
        /// andOTP's JSON, plain or encrypted.
        case andotp
        /// FreeOTP+'s JSON.
        case freeotp
    }

    /// Every token of `input`, an export of `kind` (asking `input.password` when it is encrypted).
    /// - Throws: ``FormatError`` naming the token and what is wrong, never a seed.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        throw FormatError("\(input.source): --format \(kind.rawValue) is not read yet; nothing was stored")
    }
}
