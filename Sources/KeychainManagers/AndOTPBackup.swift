import Crypto
import KeychainFormats
import KeychainSystem

/// andOTP's backups (andOTP/andOTP: Database/Entry.java, Tasks/EncryptedRestoreTask.java,
/// Utilities/BackupHelper.java): a JSON list of tokens ({secret, issuer, label, digits, type,
/// algorithm, period or counter, tags, thumbnail, …}), plain (`.json`) or encrypted
/// (`.json.aes`): a 4-byte big-endian PBKDF2 iteration count, a 12-byte salt, then AES-256-GCM's
/// 12-byte nonce, ciphertext and tag under PBKDF2-HMAC-SHA1(password, salt, count); or, in its
/// old format, the nonce, ciphertext and tag under SHA-256(password).
enum AndOTPBackup {
    static let app = "andOTP"

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        guard isText(input.bytes) else {
            var plaintext = try decrypt(input)
            defer { wipe(&plaintext) }
            let decrypted = "\(source)'s decrypted content"
            return try export(
                OTPJSON.value(OTPJSON.text(plaintext, source: decrypted), source: decrypted, app: app), source: source)
        }
        return try export(
            OTPJSON.value(OTPJSON.text(input.bytes, source: source), source: source, app: app), source: source)
    }

    /// Whether `bytes` are text (a plain backup, or another file given by mistake) rather than an
    /// encrypted backup: UTF-8 or UTF-16 without control characters, or what starts and ends as a
    /// JSON list or object does (text in another encoding, which is then refused as such).
    private static func isText(_ bytes: [UInt8]) -> Bool {
        let white: Set<UInt8> = [0x09, 0x0A, 0x0D, 0x20]
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        // An old-format backup starts with a random nonce, which may look like a byte order mark.
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            return (try? OTPJSON.text(bytes, source: "")) != nil
        }
        if let first = body.first(where: { !white.contains($0) }), let last = body.last(where: { !white.contains($0) }),
            [UInt8(ascii: "["), UInt8(ascii: "{")].contains(first),
            [UInt8(ascii: "]"), UInt8(ascii: "}")].contains(last)
        {
            return true
        }
        return String(validating: body, as: UTF8.self) != nil && !body.contains { $0 < 0x20 && !white.contains($0) }
    }

    /// The JSON an encrypted backup holds, in the current format or else the old one.
    private static func decrypt(_ input: ManagerInput) throws -> [UInt8] {
        let (bytes, source) = (input.bytes, input.source)
        guard bytes.count >= 12 + 16 else {
            throw FormatError(
                "\(source) is neither andOTP's JSON nor an encrypted andOTP backup (it is too short); nothing was stored"
            )
        }
        let tag = Array(bytes.suffix(16))
        let iterations = bytes.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        let limit = OTPCrypto.maximumPBKDF2Iterations
        let current = bytes.count >= 4 + 12 + 12 + 16 && (1...limit).contains(iterations)
        var password = try input.password()
        defer { wipe(&password) }
        if current, let key = OTPCrypto.pbkdf2(password, salt: Array(bytes[4..<16]), iterations: iterations),
            let plaintext = OTPCrypto.open(
                bytes[28..<(bytes.count - 16)], tag: tag, nonce: Array(bytes[16..<28]), key: key)
        {
            return plaintext
        }
        let old = SymmetricKey(data: SHA256.hash(data: password))
        if let plaintext = OTPCrypto.open(
            bytes[12..<(bytes.count - 16)], tag: tag, nonce: Array(bytes[0..<12]), key: old)
        {
            return plaintext
        }
        guard current else {
            // No andOTP backup asks for so many iterations; an old-format one starts with its nonce.
            throw FormatError(
                "\(source): the password is wrong (it does not open the file as an andOTP backup of the old "
                    + "format), or the file is damaged: as a current backup it asks for \(iterations) PBKDF2 "
                    + "iterations, outside the 1 to \(limit) this reads (8 times the most andOTP writes); "
                    + "nothing was stored", kind: .wrongPassword)
        }
        throw FormatError(
            "\(source): the password is wrong, or the file is damaged or was altered: it opens neither as an andOTP "
                + "backup nor as one of its old format; nothing was stored. Give the password of the backup",
            kind: .wrongPassword)
    }

    static func export(_ value: JSONNode, source: String) throws -> ManagerExport {
        guard case .array(let items) = value else {
            throw FormatError(
                "\(source) is not andOTP's JSON: it is not a list of tokens; nothing was stored. Choose another "
                    + "--format if another app wrote it")
        }
        var icons = 0
        let tokens = try items.enumerated().map { index, value in
            let location = "\(source): token \(index + 1)"
            let item = try JSONMembers(value, location: location, app: app, what: "an andOTP token")
            if let thumbnail = try item.string("thumbnail"), thumbnail.lowercased() != "default" { icons += 1 }
            return try token(item, location: location)
        }
        let notImported =
            icons == 0
            ? [] : ["\(source): \(OTPExport.count(icons, "icon (thumbnail)", "icons (thumbnails)")) not imported"]
        return OTPExport.export(tokens, source: source, notImported: notImported)
    }

    private static func token(_ item: JSONMembers, location: String) throws -> OTPToken {
        guard let secret = Base32.decode(try item.requiredString("secret")) else {
            throw FormatError(
                "\(location): its secret is not base32 (letters A-Z and digits 2-7), as andOTP writes it; "
                    + "nothing was stored")
        }
        let type = try item.string("type") ?? "TOTP"
        let algorithm = OTPToken.algorithmName(try item.string("algorithm") ?? "SHA1")
        let digits = Int(try item.integer("digits", in: 1...10) ?? (type == "STEAM" ? 5 : 6))
        let period = Int(try item.integer("period", in: 1...Int64(Int32.max / 1000)) ?? 30)
        var token = OTPToken(
            issuer: try item.string("issuer") ?? "", account: try item.requiredString("label"),
            code: .other(kind: "", text: ""))
        let tags = try item.strings("tags")
        token.fields += tags.map { .init("tag", $0) }
        let (issuer, account) = (token.issuer, token.account)
        func uri(_ type: String, _ parameters: [(String, String)]) -> String {
            OTPToken.uri(
                type, issuer: issuer, account: account, secret: secret,
                parameters + [("algorithm", algorithm), ("digits", String(digits))])
        }
        switch type {
        case "TOTP":
            token.code = .totp(secret: secret, algorithm: algorithm, digits: digits, period: period)
        case "HOTP":
            let counter = try item.requiredInteger("counter", in: 0...9_007_199_254_740_992)
            token.code = .other(kind: "HOTP", text: uri("hotp", [("counter", String(counter))]))
        case "STEAM":
            token.code = .other(kind: "Steam", text: uri("steam", [("period", String(period))]))
        case "MOTP":
            // As andOTP writes it as a URI (Entry.toUri): the secret is the mOTP secret's own text.
            let text = String(validating: secret, as: UTF8.self) ?? Base32.encode(secret)
            token.code = .other(
                kind: "mOTP",
                text: "otpauth://motp/\(OTPToken.label(issuer: issuer, account: account))?secret="
                    + OTPToken.percentEncoded(text)
                    + (issuer.isEmpty ? "" : "&issuer=\(OTPToken.percentEncoded(issuer))"))
        default:
            throw FormatError(
                "\(location) is a token of the type \(quotedValue(type, expected: "a token type")), which andOTP "
                    + "does not write (TOTP, HOTP, STEAM, MOTP); nothing was stored")
        }
        return token
    }
}
