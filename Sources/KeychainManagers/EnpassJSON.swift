import FoundationEssentials
import KeychainFormats
import KeychainSystem

/// Enpass 6's JSON export (File > Export > .json): `folders` (uuid, title, parent_uuid) and
/// `items`, each with its title, note, `folders` (uuids), `trashed`/`archived` flags, `fields`
/// (label, type — username, email, password, url, totp, phone, text, section… —, value,
/// `deleted`) and `attachments` (name, and its bytes in base64 as `data`).
enum EnpassJSON {
    static let what = "an Enpass JSON export"

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        let text = try JSONExport.text(of: input.bytes, source: source, what: what)
        let root = try JSONExport.document(text[...], source: source, what: what)
        guard let items = root["items"]?.elements else {
            throw FormatError(
                "\(source) is not \(what) (it has no list of items); nothing was stored. "
                    + "Export again from Enpass as .json, or give its CSV export")
        }
        let folders = try paths(of: root["folders"], source: source)
        var export = ManagerExport()
        for (index, value) in items.enumerated() {
            let location = "\(source): item \(index + 1)"
            guard let item = value.members.map(JSONNode.object) else {
                throw FormatError("\(location) is not an object; nothing was stored")
            }
            guard item["title"]?.string != nil else {
                throw FormatError(
                    "\(source) is not \(what): its item \(index + 1) has no title, as Enpass's items have; "
                        + "nothing was stored. Export again from Enpass as .json")
            }
            let title = JSONExport.title(item["title"]?.text)
            if item["trashed"]?.isSet == true {
                export.notImported.append(
                    "item \(index + 1) \(quotedValue(title, expected: "a title")) is in Enpass's trash: left out")
                continue
            }
            let inFolders = (item["folders"]?.elements ?? []).compactMap { $0.string.flatMap { folders[$0] } }
            var entry = PasswordEntry(
                path: (inFolders.first ?? []) + [title], password: "", notes: item["note"]?.text ?? "")
            try read(fields: item["fields"], into: &entry, title: title, at: location)
            for more in inFolders.dropFirst() { entry.addNonEmpty("folder", more.joined(separator: "/")) }
            if item["archived"]?.isSet == true { entry.addNonEmpty("state", "archived") }
            entry = entry.withReadableFieldNames()
            export.entries.append(entry)
            var names: Set<String> = []
            for (number, attachment) in (item["attachments"]?.elements ?? []).enumerated() {
                let given = attachment["name"]?.string ?? ""
                let name = given.isEmpty || given.contains("/") ? "attachment \(number + 1)" : given
                guard let data = attachment["data"]?.string, !data.isEmpty else {
                    export.notImported.append(
                        "the entry \(quotedValue(entry.key, expected: "an entry name")) has the attachment "
                            + "\(quotedValue(name, expected: "a file name")), whose bytes the export does not hold: "
                            + "not imported (save it from Enpass, then store it with keychain-cli set --from-file)")
                    continue
                }
                guard let bytes = Data(base64Encoded: data.filter { !$0.isWhitespace }) else {
                    throw FormatError(
                        "\(location): the attachment \(quotedValue(name, expected: "a file name")) is not valid "
                            + "base64; nothing was stored. Export again from Enpass")
                }
                export.files.append(
                    ManagerFile(entry: entry.key, name: JSONExport.unique(name, in: &names), bytes: Array(bytes)))
            }
        }
        return export
    }

    /// The fields of an item: the first password the password, the first username `username`,
    /// each URL `url`, the first TOTP the TOTP, any other field under its label (its type when it
    /// has none); sections (headings) and deleted fields left out.
    static func read(fields: JSONNode?, into entry: inout PasswordEntry, title: String, at location: String) throws {
        var username: [PasswordEntry.Field] = []
        var urls: [PasswordEntry.Field] = []
        var others: [PasswordEntry.Field] = []
        for field in fields?.elements ?? [] {
            guard field.members != nil else {
                throw FormatError("\(location): a field is not an object; nothing was stored")
            }
            let type = field["type"]?.string ?? ""
            guard type != "section", field["deleted"]?.isSet != true, let value = field["value"]?.text,
                !value.isEmpty
            else { continue }
            let label = field["label"]?.text.flatMap { $0.isEmpty ? nil : $0 } ?? (type.isEmpty ? "field" : type)
            switch type {
            case "password" where entry.password.isEmpty: entry.password = value
            case "username" where username.isEmpty: username.append(.init("username", value))
            case "url": urls.append(.init("url", value))
            case "totp" where entry.totp == nil: entry.setTOTP(value, label: title)
            default: others.append(.init(label, value))
            }
        }
        entry.fields = username + urls + others + entry.fields
    }

    /// Each folder's path (its parents' titles, then its own) by its uuid.
    static func paths(of folders: JSONNode?, source: String) throws -> [String: [String]] {
        var parents: [String: (title: String, parent: String)] = [:]
        for folder in folders?.elements ?? [] {
            guard let uuid = folder["uuid"]?.string else {
                throw FormatError("\(source): a folder has no uuid; nothing was stored. Export again from Enpass")
            }
            parents[uuid] = (folder["title"]?.text ?? "", folder["parent_uuid"]?.string ?? "")
        }
        var paths: [String: [String]] = [:]
        for uuid in parents.keys {
            var path: [String] = []
            var current: String? = uuid
            var seen: Set<String> = []
            while let id = current, let folder = parents[id], seen.insert(id).inserted {
                path.insert(folder.title, at: 0)
                current = folder.parent.isEmpty ? nil : folder.parent
            }
            paths[uuid] = path
        }
        return paths
    }
}
