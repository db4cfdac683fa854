import KeychainSystem

/// A TOTP seed as the sources give it: an `otpauth://` URI, or a bare base32 seed.
package enum OTPSeed {
    /// `seed` as an `otpauth://` URI: as it is when it is one; a bare base32 seed (spaces,
    /// hyphens and `=` padding ignored, any case) as `otpauth://totp/LABEL?secret=SEED`, which
    /// means what the bare seed means (SHA1, 6 digits, 30 seconds); nil for anything else (a
    /// Steam seed, `steam://…` or `encoder=steam`, which `otp` does not compute).
    package static func uri(_ seed: String, label: String) -> String? {
        let trimmed = String(seed.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        // A Steam code (KeePassXC's `encoder=steam`) is not the TOTP `otp` computes.
        if trimmed.lowercased().hasPrefix("otpauth://") {
            guard !trimmed.lowercased().contains("encoder=steam") else { return nil }
            // The scheme and the type in lower case (a QR code's OTPAUTH://TOTP/), as otp and
            // pass-otp find the line; the rest as it is.
            let rest = trimmed.dropFirst("otpauth://".count)
            let type = rest.prefix { $0 != "/" }
            return "otpauth://" + type.lowercased() + rest.dropFirst(type.count)
        }
        let base32 = trimmed.uppercased().filter { !" -=".contains($0) }
        guard !base32.isEmpty, base32.allSatisfy({ ("A"..."Z").contains($0) || ("2"..."7").contains($0) }) else {
            return nil
        }
        // The label percent-encoded (RFC 3986's unreserved characters as they are).
        let name = label.utf8.map { byte in
            let character = Character(Unicode.Scalar(byte))
            return byte < 0x80 && (character.isLetter || character.isNumber || "-._~".contains(character))
                ? String(character) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
        return "otpauth://totp/\(name)?secret=\(base32)"
    }
}

extension OTPSeed {
    /// KeeOTP's settings, as KeePassXC reads them from an `otp` attribute
    /// (`key=SEED&step=30&size=6&otpHashMode=SHA256`), as an `otpauth://` URI; nil when `text`
    /// is not such settings or holds one `otp` cannot compute.
    package static func keeOTP(_ text: String, label: String) -> String? {
        var settings: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            guard let value = percentDecoded(parts[1]) else { return nil }
            settings[parts[0].lowercased()] = value
        }
        // The key is a base32 seed, never a URI of its own.
        guard let key = settings.removeValue(forKey: "key"), !key.lowercased().hasPrefix("otpauth://"),
            var uri = uri(key, label: label)
        else { return nil }
        if let step = settings.removeValue(forKey: "step") {
            guard let seconds = Int(step), seconds > 0 else { return nil }
            uri += "&period=\(seconds)"
        }
        if let size = settings.removeValue(forKey: "size") {
            guard let digits = Int(size), (6...8).contains(digits) else { return nil }
            uri += "&digits=\(digits)"
        }
        if let mode = settings.removeValue(forKey: "otphashmode") {
            let names = [
                "sha1": "SHA1", "sha-1": "SHA1", "sha256": "SHA256", "sha-256": "SHA256", "sha512": "SHA512",
                "sha-512": "SHA512",
            ]
            guard let algorithm = names[mode.lowercased()] else { return nil }
            uri += "&algorithm=\(algorithm)"
        }
        // Anything else (an encoder, a counter) would change the code: not a TOTP `otp` computes.
        return settings.isEmpty ? uri : nil
    }
}

extension String {
    /// The string with `0`s in front up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
