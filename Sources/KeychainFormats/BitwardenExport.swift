import FoundationEssentials
import KeychainSystem

/// Bitwarden's unencrypted JSON export (`bw export --format json`, "Export vault" as .json): its
/// items as ``PasswordEntry``s. What Bitwarden writes: bitwarden/clients,
/// libs/common/src/models/export (an item's `type`: 1 login, 2 secure note, 3 card, 4 identity,
/// 5 SSH key; a custom field's `type`: 0 text, 1 hidden, 2 boolean, 3 linked).
package enum BitwardenExport {
    /// The members of each kind of item, in the order Bitwarden's own export writes them; a kind
    /// this version does not know gives its members in the order of their names.
    static let kinds: [(name: String, members: [String])] = [
        ("login", []),
        ("secureNote", []),
        ("card", ["cardholderName", "brand", "number", "expMonth", "expYear", "code"]),
        (
            "identity",
            [
                "title", "firstName", "middleName", "lastName", "address1", "address2", "address3", "city", "state",
                "postalCode", "country", "company", "email", "phone", "ssn", "username", "passportNumber",
                "licenseNumber",
            ]
        ),
        ("sshKey", ["privateKey", "publicKey", "keyFingerprint"]),
    ]

    /// Every item of `text`, an unencrypted export.
    /// - Throws: ``FormatError`` naming the item and what is wrong, or saying the export is
    ///   encrypted (it cannot be read without the account).
    package static func entries(of text: String, source: String) throws -> [PasswordEntry] {
        let document: [String: JSONValue]
        do {
            guard let object = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)).object else {
                throw FormatError("\(source) is not a Bitwarden JSON export (it is not a JSON object)")
            }
            document = object
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError(
                "\(source) is not valid JSON, so not a Bitwarden JSON export; nothing was stored. "
                    + "`python3 -m json.tool FILE` names the line at fault")
        }
        if case .bool(true) = document["encrypted"] {
            throw FormatError(
                "\(source) is an encrypted Bitwarden export, which only Bitwarden can open; nothing was stored. "
                    + "Export the vault again as .json (not encrypted) and import that, then delete it")
        }
        guard let items = document["items"]?.array else {
            throw FormatError("\(source) is not a Bitwarden JSON export: it has no list of items")
        }
        let groups = (document["folders"]?.array ?? []) + (document["collections"]?.array ?? [])
        var folders: [String: String] = [:]
        for group in groups {
            if let id = group.object?["id"]?.string, let name = group.object?["name"]?.string { folders[id] = name }
        }
        return try items.enumerated().map { index, value in
            guard let item = value.object else { throw FormatError("\(source): item \(index + 1) is not an object") }
            return try entry(item, folders: folders, at: "\(source): item \(index + 1)")
        }
    }

    private static func entry(_ item: [String: JSONValue], folders: [String: String], at location: String) throws
        -> PasswordEntry
    {
        let title = item["name"]?.text ?? ""
        let folder =
            item["folderId"]?.string.flatMap { folders[$0] }
            ?? item["collectionIds"]?.array?.first?.string.flatMap { folders[$0] }
        var entry = PasswordEntry(
            path: (folder.map { $0.split(separator: "/").map(String.init) } ?? []) + [title], password: "",
            notes: item["notes"]?.text ?? "")
        func add(_ name: String, _ value: String?) {
            if let value, !value.isEmpty { entry.fields.append(.init(name, value)) }
        }
        if let login = item["login"]?.object {
            entry.password = login["password"]?.text ?? ""
            add("username", login["username"]?.text)
            for uri in login["uris"]?.array ?? [] { add("url", uri.object?["uri"]?.text) }
            if let totp = login["totp"]?.text, !totp.isEmpty {
                if let uri = OTPSeed.uri(totp, label: title) { entry.totp = uri } else { add("totp", totp) }
            }
            for credential in login["fido2Credentials"]?.array ?? [] { add("passkey", credential.jsonText) }
        }
        for (kind, members) in kinds where kind != "login" {
            guard let object = item[kind]?.object else { continue }
            let known = members.filter { object[$0] != nil }
            let others = object.keys.filter { !members.contains($0) && !(kind == "secureNote" && $0 == "type") }
                .sorted()
            for name in known + others { add(name, object[name]?.text) }
        }
        for other in item.keys.sorted() where isKindOfItem(other, item[other]) {
            for name in item[other]!.object!.keys.sorted() { add(name, item[other]!.object![name]?.text) }
        }
        for (number, field) in (item["fields"]?.array ?? []).enumerated() {
            guard let field = field.object else {
                throw FormatError("\(location): custom field \(number + 1) is not an object")
            }
            let name = field["name"]?.text ?? ""
            if case .number(3) = field["type"] {
                add(name, "(linked to \(linkedName(field["linkedId"])))")
            } else {
                entry.fields.append(.init(name, field["value"]?.text ?? ""))
            }
        }
        for old in item["passwordHistory"]?.array ?? [] { add("previous password", old.object?["password"]?.text) }
        return entry
    }

    /// Whether `name` is the object of a kind of item this version does not know (bank account,
    /// driver's licence, passport: newer Bitwarden versions).
    private static func isKindOfItem(_ name: String, _ value: JSONValue?) -> Bool {
        let item = [
            "id", "organizationId", "folderId", "type", "reprompt", "name", "notes", "key", "favorite", "fields",
            "passwordHistory", "revisionDate", "creationDate", "deletedDate", "archivedDate", "collectionIds",
        ]
        return value?.object != nil && !item.contains(name) && !kinds.contains { $0.name == name }
    }

    /// What a linked field refers to, by Bitwarden's LinkedIdType.
    private static func linkedName(_ id: JSONValue?) -> String {
        let names = [
            100: "username", 101: "password", 300: "cardholderName", 301: "expMonth", 302: "expYear", 303: "code",
            304: "brand", 305: "number",
        ]
        guard case .number(let number) = id else { return "nothing" }
        return names[Int(number)] ?? "field \(Int(number))"
    }
}

/// A TOTP seed as the sources give it: an `otpauth://` URI, or a bare base32 seed.
package enum OTPSeed {
    /// `seed` as an `otpauth://` URI: as it is when it is one; a bare base32 seed (spaces,
    /// hyphens and `=` padding ignored, any case) as `otpauth://totp/LABEL?secret=SEED`, which
    /// means what the bare seed means (SHA1, 6 digits, 30 seconds); nil for anything else (a
    /// Steam seed, `steam://…`, which `otp` does not compute).
    package static func uri(_ seed: String, label: String) -> String? {
        let trimmed = String(seed.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        if trimmed.lowercased().hasPrefix("otpauth://") { return trimmed }
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

extension String {
    /// The string with `0`s in front up to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
