import KeychainFormats

/// Authenticator apps' exports: each token an entry whose `otp` works.
///
/// Each token becomes an entry titled `ISSUER (ACCOUNT)` (the issuer or the account alone when
/// the other is empty, `token N` when both are), under its group where the app has groups; its
/// fields are `username` (the account) and `issuer`, then what else the app keeps of it (tags,
/// a PIN, a favourite's mark); the app's note is the entry's notes. A TOTP is an
/// `otpauth://totp/` URI with its secret, algorithm, digits and period, so that `otp KEY`
/// computes the code the app shows. A token `otp` cannot compute (HOTP, Steam, Yandex, mOTP) is
/// kept under `otp` as the app itself writes it as a URI, and named on standard error.
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
    /// - Throws: ``FormatError`` naming the token and what is wrong, never a seed; with
    ///   ``FormatError/Kind/wrongPassword`` when the password does not open an encrypted export.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        switch kind {
        case .aegis: return try AegisBackup.read(input)
        case .andotp: return try AndOTPBackup.read(input)
        case .freeotp:
            // FreeOTP's own backup (not FreeOTP+'s) is a Java serialization, which starts so.
            if input.bytes.starts(with: [0xAC, 0xED]) {
                throw FormatError(
                    "\(input.source) is FreeOTP's own backup (a Java serialization), not FreeOTP+'s JSON export, "
                        + "and this version does not read it; nothing was stored. Export the tokens from FreeOTP+ "
                        + "(Export JSON), or store each token's otpauth:// URI with keychain-cli set")
            }
            return try FreeOTPBackup.read(input)
        }
    }

    /// The export of `tokens`: an entry each, and a line for each one `otp` cannot compute.
    static func export(_ tokens: [OTPToken], source: String, notImported: [String] = []) -> ManagerExport {
        var export = ManagerExport(notImported: notImported)
        for (index, token) in tokens.enumerated() {
            let (entry, note) = token.entry(number: index + 1, source: source)
            export.entries.append(entry)
            if let note { export.notImported.append(note) }
        }
        return export
    }

    /// What a backup holds of `number` tokens that is not imported: `the icon of 1 token is`,
    /// `the icons of 2 tokens are`.
    static func count(_ number: Int, _ singular: String, _ plural: String) -> String {
        number == 1 ? "the \(singular) of 1 token is" : "the \(plural) of \(number) tokens are"
    }
}
