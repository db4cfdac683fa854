import Crypto
import FoundationEssentials
import KeychainFormats
import KeychainSystem

/// Aegis Authenticator's vault as it exports it (beemdevelopment/Aegis, docs/vault.md):
/// `{"version": 1, "header": {"slots", "params"}, "db": …}`, where `db` is the content (an
/// object of `entries` and `groups`) or, in an encrypted export, that content's JSON encrypted
/// with AES-256-GCM under a master key (base64, its nonce and tag in `header.params`), which
/// each password slot (`type` 1) holds wrapped under scrypt(password, salt, n, r, p).
enum AegisBackup {
    static let app = "Aegis"

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        let text = try OTPJSON.text(input.bytes, source: source)
        let document = try JSONMembers(
            OTPJSON.value(text, source: source, app: app), location: source, app: app, what: "an Aegis vault")
        guard let version = try document.integer("version", in: 0...Int64(Int32.max)) else {
            throw FormatError(
                "\(source) is not an Aegis vault: it has no 'version'; nothing was stored. Export it again from Aegis")
        }
        guard version == 1 else {
            throw FormatError(
                "\(source) is an Aegis vault of version \(version), and this reads version 1; nothing was stored")
        }
        switch document["db"] {
        case .object?:
            return try export(document["db"]!, source: source)
        case .string(let encrypted)?:
            var plaintext = try decrypt(encrypted, header: document["header"], input: input)
            defer { wipe(&plaintext) }
            let content = try OTPJSON.value(
                OTPJSON.text(plaintext, source: "\(source)'s decrypted content"),
                source: "\(source)'s decrypted content",
                app: app)
            return try export(content, source: source)
        case nil: throw document.missing("db")
        default: throw document.wrong("db", "an object or, encrypted, a text")
        }
    }

    /// A password slot: the master key wrapped under its scrypt key.
    private struct PasswordSlot {
        var key: [UInt8]
        var nonce: [UInt8]
        var tag: [UInt8]
        var salt: [UInt8]
        var n: Int
        var r: Int
        var p: Int
        var location: String
    }

    /// The content `base64` holds, decrypted with the master key of the first password slot that
    /// the password opens.
    private static func decrypt(_ base64: String, header: JSONNode?, input: ManagerInput) throws -> [UInt8] {
        let source = input.source
        guard let header else {
            throw FormatError("\(source) is encrypted but has no 'header' to open it with; nothing was stored")
        }
        let members = try JSONMembers(header, location: "\(source): the header", app: app, what: "an Aegis header")
        guard let params = members["params"] else { throw members.missing("params") }
        let content = try JSONMembers(
            params, location: "\(source): the header's params", app: app, what: "Aegis's encryption parameters")
        let (nonce, tag) = (try hex(content, "nonce", count: 12), try hex(content, "tag", count: 16))
        guard let ciphertext = Data(base64Encoded: base64) else {
            throw FormatError(
                "\(source): 'db' is not base64, so the file is damaged; nothing was stored. Export it again")
        }
        guard let values = try members.array("slots") else { throw members.missing("slots") }
        let slots = try values.enumerated().compactMap {
            try passwordSlot($1, location: "\(source): key slot \($0 + 1)")
        }
        guard !slots.isEmpty else {
            throw FormatError(
                "\(source) has no password slot (only the phone's own key opens it); nothing was stored. "
                    + "Export it again from Aegis with a password")
        }
        // Each slot costs a scrypt run: Aegis writes one or two (a backup password).
        guard slots.count <= 8 else {
            throw FormatError(
                "\(source) has \(slots.count) password slots, more than the 8 this tries; nothing was stored")
        }
        var password = try input.password()
        defer { wipe(&password) }
        var masterKey: [UInt8]?
        for slot in slots {
            let key = try OTPCrypto.scrypt(
                password, salt: slot.salt, n: slot.n, r: slot.r, p: slot.p, location: slot.location)
            masterKey = OTPCrypto.open(slot.key, tag: slot.tag, nonce: slot.nonce, key: key)
            if masterKey != nil { break }
        }
        guard var master = masterKey else {
            throw FormatError(
                "\(source): the password is wrong: it opens none of the vault's password slots; nothing was stored. "
                    + "Give the password the vault was exported with", kind: .wrongPassword)
        }
        // The one array holding it, so that the wipe reaches its bytes rather than a copy's.
        masterKey = nil
        defer { wipe(&master) }
        // 32 bytes: the slot's key is 32 bytes, and GCM keeps the length.
        guard let plaintext = OTPCrypto.open(ciphertext, tag: tag, nonce: nonce, key: SymmetricKey(data: master)) else {
            throw FormatError(
                "\(source): the password is right, but the vault's content does not match its tag: the file is "
                    + "damaged or was altered; nothing was stored. Export it again")
        }
        return plaintext
    }

    /// The slot `value` when it is a password slot (`type` 1), its scrypt parameters checked.
    private static func passwordSlot(_ value: JSONNode, location: String) throws -> PasswordSlot? {
        let slot = try JSONMembers(value, location: location, app: app, what: "an Aegis key slot")
        guard try slot.requiredInteger("type", in: 0...255) == 1 else { return nil }
        guard let params = slot["key_params"] else { throw slot.missing("key_params") }
        let keyParams = try JSONMembers(
            params, location: "\(location)'s key_params", app: app, what: "Aegis's encryption parameters")
        let limit = Int64(OTPCrypto.maximumScryptWork)
        let (n, r, p) = (
            try slot.requiredInteger("n", in: 0...Int64(UInt32.max)), try slot.requiredInteger("r", in: 0...limit),
            try slot.requiredInteger("p", in: 0...limit)
        )
        guard n >= 2, n & (n - 1) == 0, r >= 1, p >= 1 else {
            throw FormatError(
                "\(location): scrypt's n=\(n), r=\(r), p=\(p) are no scrypt parameters (n a power of 2, r and p "
                    + "1 or more); nothing was stored")
        }
        let (work, overflow) = n.multipliedReportingOverflow(by: r * p)
        guard !overflow, work <= limit else {
            throw FormatError(
                "\(location) asks scrypt for n=\(n), r=\(r), p=\(p): more than the \(limit) n·r·p this reads "
                    + "(8 times the n=32768, r=8, p=1 Aegis writes); nothing was stored. Was it written by Aegis?")
        }
        let salt = try hex(slot, "salt", count: nil)
        guard (1...1024).contains(salt.count) else {
            throw FormatError("\(location): its salt is \(salt.count) bytes, not 1 to 1024; nothing was stored")
        }
        return PasswordSlot(
            key: try hex(slot, "key", count: 32), nonce: try hex(keyParams, "nonce", count: 12),
            tag: try hex(keyParams, "tag", count: 16), salt: salt, n: Int(n), r: Int(r), p: Int(p),
            location: location)
    }

    /// The bytes of the hexadecimal member `name`, `count` of them when it is given.
    private static func hex(_ members: JSONMembers, _ name: String, count: Int?) throws -> [UInt8] {
        guard let bytes = hexBytes(try members.requiredString(name)), count.map({ bytes.count == $0 }) ?? true
        else { throw members.wrong(name, count.map { "\($0) bytes in hexadecimal" } ?? "hexadecimal") }
        return bytes
    }
}
