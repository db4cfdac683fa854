import KeychainFormats
import KeychainSystem

/// A token of an authenticator app as a reader finds it, before it is an entry.
struct OTPToken {
    /// What the token computes.
    enum Code {
        /// A TOTP (RFC 6238): `otp` computes it when it knows its algorithm, digits and period.
        case totp(secret: [UInt8], algorithm: String, digits: Int, period: Int)
        /// A token `otp` does not compute: its kind as people know it (`HOTP`, `Steam`) and its
        /// text as the app writes it as a URI, kept under `otp`.
        case other(kind: String, text: String)
    }

    var issuer: String
    var account: String
    var code: Code
    /// The folders of its entry, outermost first: its group, where the app has groups.
    var folders: [String] = []
    /// What else the app keeps of it, after `username` and `issuer`.
    var fields: [PasswordEntry.Field] = []
    var notes = ""

    /// The algorithms, digits and periods `otp` computes.
    static let algorithms = ["SHA1", "SHA256", "SHA512"]
    static let digits = 6...8
    static let periods = 1...86_400

    /// Its title: `ISSUER (ACCOUNT)`, or the one of them that is not empty; nil when both are.
    var title: String? {
        switch (issuer.isEmpty, account.isEmpty) {
        case (false, false): "\(issuer) (\(account))"
        case (false, true): issuer
        case (true, false): account
        case (true, true): nil
        }
    }

    /// Its entry, and what to say on standard error when `otp` cannot compute its code.
    func entry(number: Int, source: String) -> (PasswordEntry, String?) {
        let title = self.title ?? "token \(number)"
        var fields: [PasswordEntry.Field] = []
        if !account.isEmpty { fields.append(.init("username", account)) }
        if !issuer.isEmpty { fields.append(.init("issuer", issuer)) }
        var entry = PasswordEntry(path: folders + [title], password: "", fields: fields + self.fields, notes: notes)
        // Only for a token to say something of (quotedValue looks for secrets in the title).
        var named: String { "\(source): token \(number) \(quotedValue(title, expected: "a token name"))" }
        let note: String?
        switch code {
        case .totp(let secret, let algorithm, let digits, let period):
            entry.setTOTP(
                Self.uri(
                    "totp", issuer: issuer, account: account, secret: secret,
                    [("algorithm", algorithm), ("digits", String(digits)), ("period", String(period))]),
                label: title)
            // What keeps `otp` from computing it, and what `otp` computes instead.
            let problem: (String, String)? =
                if secret.isEmpty {
                    ("has an empty secret", "otp needs one to compute a code")
                } else if !Self.algorithms.contains(algorithm) {
                    (
                        "uses the algorithm \(quotedValue(algorithm, expected: "an algorithm"))",
                        "otp computes SHA1, SHA256 and SHA512 codes only"
                    )
                } else if !Self.digits.contains(digits) {
                    ("has codes of \(digits) digits", "otp computes codes of 6 to 8 digits only")
                } else if !Self.periods.contains(period) {
                    ("has a period of \(period) seconds", "otp computes periods of 1 to 86400 seconds only")
                } else {
                    nil
                }
            note = problem.map { "\(named) \($0.0): kept as its otpauth URI under otp; \($0.1)" }
        case .other(let kind, let text):
            entry.setTOTP(text, label: title)
            let form = text.hasPrefix("otpauth://") ? "its otpauth URI" : "the app's own URI"
            note = "\(named) is a \(kind) token: kept as \(form) under otp; otp computes TOTP codes only"
        }
        return (entry.withReadableFieldNames(), note)
    }

    /// The label of a token's URIs, as Google's Key URI Format has it: `ISSUER:ACCOUNT`, or the
    /// one of them that is not empty, each percent-encoded.
    static func label(issuer: String, account: String) -> String {
        [issuer, account].filter { !$0.isEmpty }.map { percentEncoded($0) }.joined(separator: ":")
    }

    /// An `otpauth://TYPE/LABEL?secret=…` URI of a token: its secret, its issuer, then `parameters`.
    static func uri(_ type: String, issuer: String, account: String, secret: [UInt8], _ parameters: [(String, String)])
        -> String
    {
        var query = [("secret", Base32.encode(secret))]
        if !issuer.isEmpty { query.append(("issuer", issuer)) }
        query += parameters
        return "otpauth://\(type)/\(label(issuer: issuer, account: account))?"
            + query.map { "\(percentEncoded($0))=\(percentEncoded($1))" }.joined(separator: "&")
    }

    /// `text` percent-encoded: RFC 3986's unreserved characters as they are, every other byte
    /// of its UTF-8 as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default: bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An algorithm's name as the apps write it, compared without regard to case and with
    /// Java's `Hmac` in front left out (`HmacSHA1` is `SHA1`).
    static func algorithmName(_ name: String) -> String {
        let upper = name.uppercased()
        return upper.hasPrefix("HMAC") ? String(upper.dropFirst(4)) : upper
    }
}
