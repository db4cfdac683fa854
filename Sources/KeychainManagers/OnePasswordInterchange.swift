import KeychainFormats
import KeychainSystem

/// 1Password's older `.1pif` (1Password Interchange Format, 1Password 4 to 7): JSON objects,
/// each followed by a line `***5642bee8-a5ff-11dc-8314-0800200c9a66***`. Each object is an item
/// `{uuid, typeName, title, location, folderUuid, trashed, openContents: {tags}, secureContents:
/// {fields: [{designation, name, type, value}], URLs: [{label, url}], sections: [{title, fields:
/// [{k, n, t, v}]}], notesPlain, password, passwordHistory: [{value, time}], …}}`; its typeName
/// `webforms.WebForm` (a login), `passwords.Password`, `securenotes.SecureNote`,
/// `wallet.financial.CreditCard`, `identities.Identity`…, `system.folder.Regular` (a folder) or
/// `system.Tombstone` (a deleted item, holding nothing).
enum OnePasswordInterchange {
    static let what = "a 1Password export (.1pif)"
    /// The members of `secureContents` read otherwise, or only a web form's layout.
    static let notFields: Set<String> = [
        "fields", "sections", "URLs", "notesPlain", "passwordHistory", "password", "documentAttributes", "htmlForm",
        "htmlMethod", "htmlAction", "htmlID", "htmlName",
    ]

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        let text = try JSONExport.text(of: input.bytes, source: source, what: what)
        var items: [(node: JSONNode, line: Int)] = []
        var chunk: [Substring] = []
        var chunkLine = 1
        func flush() throws {
            let joined = chunk.joined(separator: "\n")
            if joined.contains(where: { !$0.isWhitespace }) {
                items.append(
                    (try JSONExport.document(joined[...], source: source, what: what, firstLine: chunkLine), chunkLine))
            }
            chunk = []
        }
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (number, line) in lines.enumerated() {
            let trimmed = line.trimming()
            if trimmed.count > 6, trimmed.hasPrefix("***"), trimmed.hasSuffix("***") {
                try flush()
                chunkLine = number + 2
            } else {
                chunk.append(line)
            }
        }
        try flush()
        var folders: [String: (title: String, parent: String)] = [:]
        for (index, item) in items.enumerated() {
            guard item.node.members != nil, let type = item.node["typeName"]?.string else {
                throw FormatError(
                    "\(source) is not a 1Password export: its item \(index + 1) (line \(item.line)) is no object "
                        + "with a typeName, as a .1pif's are; nothing was stored. Export again from 1Password")
            }
            if type.hasPrefix("system.folder."), let uuid = item.node["uuid"]?.string {
                folders[uuid] = (item.node["title"]?.text ?? "", item.node["folderUuid"]?.string ?? "")
            }
        }
        func path(_ uuid: String?) -> [String] {
            var path: [String] = []
            var current = uuid
            var seen: Set<String> = []
            while let id = current, let folder = folders[id], seen.insert(id).inserted {
                path.insert(folder.title, at: 0)
                current = folder.parent
            }
            return path
        }
        var export = ManagerExport()
        for (index, item) in items.enumerated() {
            let node = item.node
            let type = node["typeName"]?.string ?? ""
            if type.hasPrefix("system.folder.") || type == "system.Tombstone" { continue }
            let title = JSONExport.title(node["title"]?.text)
            if node["trashed"]?.isSet == true {
                export.notImported.append(
                    "item \(index + 1) \(quotedValue(title, expected: "a title")) is in 1Password's trash: left out")
                continue
            }
            let entry = self.entry(node, path: path(node["folderUuid"]?.string) + [title]).withReadableFieldNames()
            export.entries.append(entry)
            if let file = node["secureContents"]?["documentAttributes"] {
                export.notImported.append(
                    "the entry \(quotedValue(entry.key, expected: "an entry name")) has the file "
                        + "\(quotedValue(file["fileName"]?.text ?? "", expected: "a file name")), which a .1pif "
                        + "does not hold: not imported (export as .1pux to keep it)")
            }
        }
        return export
    }

    /// The entry of the item `node`, at `path`.
    static func entry(_ node: JSONNode, path: [String]) -> PasswordEntry {
        let secure = node["secureContents"] ?? .object([])
        let title = path.last ?? ""
        var entry = PasswordEntry(path: path, password: "", notes: secure["notesPlain"]?.text ?? "")
        var username: [PasswordEntry.Field] = []
        var urls: [String] = []
        var others: [PasswordEntry.Field] = []
        func field(_ name: String?, _ value: String?) {
            if let value, !value.isEmpty {
                others.append(.init(name.flatMap { $0.isEmpty ? nil : $0 } ?? "field", value))
            }
        }
        for login in secure["fields"]?.elements ?? [] {
            let value = login["value"]?.text ?? ""
            switch login["designation"]?.string {
            case "username" where username.isEmpty && !value.isEmpty: username.append(.init("username", value))
            case "password" where entry.password.isEmpty: entry.password = value
            default: field(login["name"]?.text ?? login["designation"]?.text ?? login["id"]?.text, value)
            }
        }
        if entry.password.isEmpty { entry.password = secure["password"]?.text ?? "" }
        for url in [node["location"]] + (secure["URLs"]?.elements ?? []).map({ $0["url"] }) {
            if let url = url?.text, !url.isEmpty, !urls.contains(url) { urls.append(url) }
        }
        for section in secure["sections"]?.elements ?? [] {
            for item in section["fields"]?.elements ?? [] {
                let value = item["v"]?.text
                let name = item["n"]?.text ?? ""
                if entry.totp == nil, let value, name.hasPrefix("TOTP_") || value.hasPrefix("otpauth://") {
                    entry.setTOTP(value, label: title)
                } else {
                    field(item["t"]?.text.flatMap { $0.isEmpty ? nil : $0 } ?? name, value)
                }
            }
        }
        for member in secure.members ?? [] where !notFields.contains(member.name) {
            field(member.name, member.value.text)
        }
        let tags = node["openContents"]?["tags"]?.elements ?? node["tags"]?.elements ?? []
        for tag in tags { field("tag", tag.text) }
        for old in secure["passwordHistory"]?.elements ?? [] { field("previous password", old["value"]?.text) }
        entry.fields = username + urls.map { .init("url", $0) } + others
        return entry
    }
}
