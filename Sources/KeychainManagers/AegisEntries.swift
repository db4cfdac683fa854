import KeychainFormats
import KeychainSystem

// The content of an Aegis vault (docs/vault.md, "Vault content"; VaultEntry.fromJson and
// OtpInfo.fromJson for what Aegis accepts): `entries`, each of a type (totp, hotp, steam, yandex,
// motp) with its `info`, and `groups` ({uuid, name}), which an entry names by uuid in its own
// `groups` (content version 3) or by name in `group` (versions 1 and 2).
extension AegisBackup {
    static func export(_ value: JSONNode, source: String) throws -> ManagerExport {
        let content = try JSONMembers(value, location: "\(source): db", app: app, what: "an Aegis vault's content")
        if let version = try content.integer("version", in: 0...Int64(Int32.max)), version > 3 {
            throw FormatError(
                "\(source) holds Aegis content of version \(version), and this reads versions 1 to 3; nothing was "
                    + "stored. Export it from Aegis as it is now, or tell keychain-cli's authors")
        }
        var groups: [(uuid: String, name: String)] = []
        for (index, value) in (try content.array("groups") ?? []).enumerated() {
            let group = try JSONMembers(
                value, location: "\(source): group \(index + 1)", app: app, what: "an Aegis group")
            groups.append((try group.requiredString("uuid").lowercased(), try group.requiredString("name")))
        }
        guard let entries = try content.array("entries") else { throw content.missing("entries") }
        var icons = 0
        let tokens = try entries.enumerated().map { index, value in
            let location = "\(source): token \(index + 1)"
            let entry = try JSONMembers(value, location: location, app: app, what: "an Aegis entry")
            if entry["icon"] != nil { icons += 1 }
            return try token(entry, groups: groups, location: location)
        }
        let notImported = icons == 0 ? [] : ["\(source): \(OTPExport.count(icons, "icon", "icons")) not imported"]
        return OTPExport.export(tokens, source: source, notImported: notImported)
    }

    private static func token(_ entry: JSONMembers, groups: [(uuid: String, name: String)], location: String) throws
        -> OTPToken
    {
        let type = try entry.requiredString("type").lowercased()
        guard let infoValue = entry["info"] else { throw entry.missing("info") }
        let info = try JSONMembers(infoValue, location: "\(location)'s info", app: app, what: "an Aegis token's info")
        guard let secret = Base32.decode(try info.requiredString("secret")) else {
            throw FormatError(
                "\(location): its secret is not base32 (letters A-Z and digits 2-7), as Aegis writes it; "
                    + "nothing was stored")
        }
        var algorithm = OTPToken.algorithmName(try info.requiredString("algo"))
        // As Aegis itself reads it: MD5 is mOTP's, and another type's MD5 was a bug of its editor.
        if type != "motp" && algorithm == "MD5" { algorithm = "SHA1" }
        let digits = Int(try info.requiredInteger("digits", in: 1...10))
        var token = OTPToken(
            issuer: try entry.requiredString("issuer"), account: try entry.requiredString("name"),
            code: .other(kind: "", text: ""), notes: try entry.string("note") ?? "")
        // Its first group in the vault's order is its folder; when it is in several, all are named.
        let uuids = Set(try entry.strings("groups").map { $0.lowercased() })
        if let unknown = uuids.first(where: { uuid in !groups.contains { $0.uuid == uuid } }) {
            throw FormatError(
                "\(location) is in the group \(unknown), which the vault does not list; nothing was stored. "
                    + "Export it again")
        }
        let names = groups.filter { uuids.contains($0.uuid) }.map(\.name)
        if let first = names.first {
            token.folders = [first]
            // Its other groups a field each, as other formats keep a tag a field each.
            token.fields += names.dropFirst().map { .init("group", $0) }
        } else if let old = try entry.string("group"), !old.isEmpty {
            token.folders = [old]
        }
        if try entry.bool("favorite") == true { token.fields.append(.init("favorite", "true")) }
        let (issuer, account) = (token.issuer, token.account)
        func uri(_ type: String, _ parameters: [(String, String)]) -> String {
            OTPToken.uri(
                type, issuer: issuer, account: account, secret: secret,
                parameters + [("algorithm", algorithm), ("digits", String(digits))])
        }
        func period() throws -> Int { Int(try info.requiredInteger("period", in: 1...Int64(Int32.max / 1000))) }
        switch type {
        case "totp":
            token.code = .totp(secret: secret, algorithm: algorithm, digits: digits, period: try period())
        case "hotp":
            let counter = try info.requiredInteger("counter", in: 0...9_007_199_254_740_992)
            token.code = .other(kind: "HOTP", text: uri("hotp", [("counter", String(counter))]))
        case "steam":
            token.code = .other(kind: "Steam", text: uri("steam", [("period", String(try period()))]))
        case "yandex":
            // As Aegis writes it as a URI (GoogleAuthInfo.getUri): yaotp, the PIN in base32.
            let pin = try info.requiredString("pin")
            let parameters = [("period", String(try period())), ("pin", Base32.encode(Array(pin.utf8)))]
            token.code = .other(kind: "Yandex", text: uri("yaotp", parameters))
            token.fields.append(.init("pin", pin))
        case "motp":
            // As Aegis writes it as a URI: motp, the secret in hexadecimal; the PIN is no part of it.
            let pin = try info.requiredString("pin")
            let hex = secret.map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }
            token.code = .other(
                kind: "mOTP",
                text: "motp://\(OTPToken.label(issuer: issuer, account: account))?secret=\(hex.joined())"
                    + (issuer.isEmpty ? "" : "&issuer=\(OTPToken.percentEncoded(issuer))"))
            token.fields.append(.init("pin", pin))
        default:
            throw FormatError(
                "\(location) is a token of the type \(quotedValue(type, expected: "a token type")), which Aegis "
                    + "does not write (totp, hotp, steam, yandex, motp); nothing was stored")
        }
        return token
    }
}
