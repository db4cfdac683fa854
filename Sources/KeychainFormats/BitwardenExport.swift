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
        guard text.contains(where: { !$0.isWhitespace && $0 != "\u{FEFF}" }) else {
            throw FormatError("\(source) is empty; nothing was stored. Did the export that writes it fail?")
        }
        // JSON tools differ on which of two members counts, and Foundation's decoder reads a
        // comma before a closing bracket, which JSON forbids: both are refused, naming the item.
        let document = try JSONReader.document(text[...], source: source, what: "a Bitwarden JSON export") {
            JSONReader.place(of: Array($0.prefix(2)), ["items": "item"])
        }
        guard case .object = document else {
            throw FormatError("\(source) is not a Bitwarden JSON export (it is not a JSON object)")
        }
        if document["format"]?.string == ExportDocument.formatName {
            throw FormatError(
                "\(source) is keychain-cli's own export, not Bitwarden's; nothing was stored", kind: .ownExportAsOther)
        }
        switch document["encrypted"] {
        case nil, .null, .bool(false): break
        case .bool(true):
            throw FormatError(
                "\(source) is an encrypted Bitwarden export, which only Bitwarden can open; nothing was stored. "
                    + "Export the vault again as .json (not encrypted) and import that, then delete it")
        default:
            throw FormatError("\(source): 'encrypted' should be true or false; nothing was stored")
        }
        guard let items = document["items"]?.elements else {
            throw FormatError("\(source) is not a Bitwarden JSON export: it has no list of items")
        }
        let groups = (document["folders"]?.elements ?? []) + (document["collections"]?.elements ?? [])
        var folders: [String: String] = [:]
        for group in groups {
            if let id = group["id"]?.string, let name = group["name"]?.string { folders[id] = name }
        }
        return try items.enumerated().map { index, item in
            guard case .object = item else { throw FormatError("\(source): item \(index + 1) is not an object") }
            guard let type = item["type"]?.double, type >= 1, type == type.rounded() else {
                throw FormatError(
                    "\(source): item \(index + 1) has no whole number 'type', so it is no Bitwarden item; nothing was stored"
                )
            }
            return try entry(item, folders: folders, at: "\(source): item \(index + 1)").withReadableFieldNames()
        }
    }

    private static func entry(_ item: JSONNode, folders: [String: String], at location: String) throws
        -> PasswordEntry
    {
        func text(_ value: JSONNode?, _ what: String) throws -> String? {
            try exactText(value, objects: false) {
                FormatError(
                    "\(location): the field '\(what)' should be text (Bitwarden writes text there); nothing was stored")
            }
        }
        func list(_ value: JSONNode?, _ what: String) throws -> [JSONNode] {
            switch value {
            case nil, .null: return []
            case .array(let elements): return elements
            default: throw FormatError("\(location): the field '\(what)' should be a list; nothing was stored")
            }
        }
        func object(_ value: JSONNode?, _ what: String) throws -> JSONNode? {
            switch value {
            case nil, .null: return nil
            case .object: return value
            default: throw FormatError("\(location): the field '\(what)' should be an object; nothing was stored")
            }
        }
        let title = try text(item["name"], "name") ?? ""
        let folder =
            item["folderId"]?.string.flatMap { folders[$0] }
            ?? item["collectionIds"]?.elements?.first?.string.flatMap { folders[$0] }
        var entry = PasswordEntry(
            path: (folder.map { $0.split(separator: "/").map(String.init) } ?? []) + [title], password: "",
            notes: try text(item["notes"], "notes") ?? "")
        func add(_ name: String, _ value: String?) {
            if let value, !value.isEmpty { entry.fields.append(.init(name, value)) }
        }
        if let login = try object(item["login"], "login") {
            entry.password = try text(login["password"], "login.password") ?? ""
            add("username", try text(login["username"], "login.username"))
            for uri in try list(login["uris"], "login.uris") {
                add("url", try text(try object(uri, "login.uris")?["uri"], "login.uris.uri"))
            }
            if let totp = try text(login["totp"], "login.totp"), !totp.isEmpty {
                entry.setTOTP(totp, label: title)
            }
            for credential in try list(login["fido2Credentials"], "login.fido2Credentials") {
                add("passkey", credential.json)
            }
        }
        for (kind, members) in kinds where kind != "login" {
            guard let object = try object(item[kind], kind) else { continue }
            let known = members.filter { object[$0] != nil }
            let others = (object.members ?? []).map(\.name).filter {
                !members.contains($0) && !(kind == "secureNote" && $0 == "type")
            }
            .sorted()
            for name in known + others { add(name, try text(object[name], "\(kind).\(name)")) }
        }
        for other in (item.members ?? []).map(\.name).sorted() where isKindOfItem(other, item[other]) {
            for member in (item[other]?.members ?? []).sorted(by: { $0.name < $1.name }) {
                add(member.name, try text(member.value, "\(other).\(member.name)"))
            }
        }
        for (number, field) in try list(item["fields"], "fields").enumerated() {
            guard case .object = field else {
                throw FormatError("\(location): custom field \(number + 1) is not an object")
            }
            let name = try text(field["name"], "fields.name") ?? ""
            if field["type"]?.double == 3 {
                add(name, "(linked to \(linkedName(field["linkedId"])))")
            } else {
                entry.fields.append(.init(name, try text(field["value"], "fields.value") ?? ""))
            }
        }
        // Bitwarden lists the newest first: they are kept in the order they were used.
        var history = try list(item["passwordHistory"], "passwordHistory")
        let dates = history.map { $0["lastUsedDate"]?.string }
        if dates.allSatisfy({ $0 != nil }) {
            history = zip(history, dates).sorted { $0.1! < $1.1! }.map(\.0)
        }
        for old in history {
            add(
                "previous password",
                try text(try object(old, "passwordHistory")?["password"], "passwordHistory.password"))
        }
        return entry
    }

    /// Whether `name` is the object of a kind of item this version does not know (bank account,
    /// driver's licence, passport: newer Bitwarden versions).
    private static func isKindOfItem(_ name: String, _ value: JSONNode?) -> Bool {
        let item = [
            "id", "organizationId", "folderId", "type", "reprompt", "name", "notes", "key", "favorite", "fields",
            "passwordHistory", "revisionDate", "creationDate", "deletedDate", "archivedDate", "collectionIds",
        ]
        return value?.members != nil && !item.contains(name) && !kinds.contains { $0.name == name }
    }

    /// What a linked field refers to, by Bitwarden's LinkedIdType.
    private static func linkedName(_ id: JSONNode?) -> String {
        let names = [
            100: "username", 101: "password", 300: "cardholderName", 301: "expMonth", 302: "expYear", 303: "code",
            304: "brand", 305: "number",
        ]
        guard let number = id?.double, number == number.rounded(), abs(number) < 1e15 else { return "nothing" }
        return names[Int(number)] ?? "field \(Int(number))"
    }
}
