import FoundationEssentials
import KeychainSystem

/// 1Password's unencrypted export (`.1pux`): the JSON of its `export.data` (the zip's member),
/// its items as ``PasswordEntry``s. The layout: support.1password.com/1pux-format,
/// `accounts[].vaults[].items[]`, each with `overview` (title, url, urls, tags) and `details`
/// (loginFields, sections of fields, notesPlain, passwordHistory, password).
package enum OnePasswordExport {
    /// A file of the export (a Document item's, or a file field's): the key of its entry, the name
    /// it is stored under beside it (its own; ` (2)`… after the name an earlier file of the item
    /// has), and its member in the zip, `files/DOCUMENTID__NAME`.
    package struct File: Equatable, Sendable {
        package var entry: String
        package var name: String
        package var member: String
    }

    /// Every item of every vault of every account in `data`, the text of `export.data`.
    /// - Throws: ``FormatError`` naming the item and what is wrong.
    package static func entries(ofData data: String, source: String) throws -> [PasswordEntry] {
        try export(ofData: data, source: source).entries
    }

    /// The items of `data` as ``entries(ofData:source:)`` reads them, and the files they have.
    package static func export(ofData data: String, source: String) throws -> (entries: [PasswordEntry], files: [File])
    {
        // Read exactly: each object's members in the file's order, each number as written.
        let (at, lists) = ("\(source): export.data", ["accounts": "account", "vaults": "vault", "items": "item"])
        let document = try JSONReader.document(data[...], source: at, what: "a 1Password export") {
            JSONReader.place(of: $0, lists)
        }
        guard case .object = document else {
            throw FormatError("\(source) is not a 1Password export (its export.data is not a JSON object)")
        }
        guard let accounts = document["accounts"]?.elements else {
            throw FormatError("\(source) is not a 1Password export: its export.data has no list of accounts")
        }
        var entries: [PasswordEntry] = []
        var files: [File] = []
        for account in accounts {
            for vault in account["vaults"]?.elements ?? [] {
                let vaultName = vault["attrs"]?["name"]?.string ?? ""
                for (index, value) in (vault["items"]?.elements ?? []).enumerated() {
                    let location =
                        "\(source): vault \(quotedValue(vaultName, expected: "a vault name")), item \(index + 1)"
                    // Older exports wrap each item as {"item": {…}}.
                    let wrapped = value["item"]?.members != nil ? value["item"] : nil
                    guard let item = wrapped ?? (value.members != nil ? value : nil) else {
                        throw FormatError("\(location) is not an object; nothing was stored")
                    }
                    let (entry, documents) = try entry(item, vault: vaultName, at: location)
                    entries.append(entry.withReadableFieldNames())
                    files += documents.map {
                        File(entry: entry.key, name: $0.key, member: "files/\($0.id)__\($0.name)")
                    }
                }
            }
        }
        return (entries, files)
    }

    /// The entry of `item`, and its files (their document ids, names, and the names they are
    /// stored under).
    private static func entry(_ item: JSONNode, vault: String, at location: String) throws
        -> (PasswordEntry, [(id: String, name: String, key: String)])
    {
        var files: [(id: String, name: String, key: String)] = []
        /// A file reference (`{fileName, documentId}`): the name it is stored under (its own, or
        /// with ` (2)`… when an earlier file of the item has it), the file kept for the caller.
        func file(_ reference: JSONNode) throws -> String {
            guard let name = reference["fileName"]?.string, let id = reference["documentId"]?.string,
                !name.isEmpty, !id.isEmpty, !name.contains("/"), !id.contains("/")
            else {
                throw FormatError("\(location): a file has no usable fileName and documentId; nothing was stored")
            }
            var key = name
            var number = 2
            while files.contains(where: { $0.key == key }) {
                key = "\(name) (\(number))"
                number += 1
            }
            files.append((id, name, key))
            return key
        }
        // A number as written, a list's or an object's JSON as the file orders its members.
        func text(_ value: JSONNode?) -> String? { value?.text }
        let overview = item["overview"] ?? .object([])
        let details = item["details"] ?? .object([])
        let title = overview["title"]?.string ?? ""
        var entry = PasswordEntry(path: [vault, title], password: "", notes: details["notesPlain"]?.string ?? "")
        func add(_ name: String, _ value: String?) {
            if let value, !value.isEmpty { entry.fields.append(.init(name, value)) }
        }
        var others: [PasswordEntry.Field] = []
        for field in details["loginFields"]?.elements ?? [] {
            guard case .object = field else { throw FormatError("\(location): a login field is not an object") }
            let value = text(field["value"])
            switch field["designation"]?.string {
            case "password": entry.password = value ?? ""
            case "username": add("username", value)
            default:
                if let value, !value.isEmpty {
                    others.append(.init(field["name"]?.string ?? field["id"]?.string ?? "field", value))
                }
            }
        }
        if entry.password.isEmpty, let password = details["password"]?.string { entry.password = password }
        let primary = overview["url"]?.string
        add("url", primary)
        for url in overview["urls"]?.elements ?? [] where url["url"]?.string != primary {
            add("url", url["url"]?.string)
        }
        entry.fields += others
        for section in details["sections"]?.elements ?? [] {
            for field in section["fields"]?.elements ?? [] {
                // The value is {kind: value}; its first member when it has more.
                guard let kind = field["value"]?.members?.first else { continue }
                let value = kind.value
                let name = field["title"]?.string.flatMap { $0.isEmpty ? nil : $0 } ?? field["id"]?.string ?? kind.name
                // An email is an object: its address, and the provider 1Password guessed.
                if kind.name == "file", case .object = value {
                    add(name, try file(value))
                    continue
                }
                let content = text(kind.name == "email" ? value["email_address"] ?? value : value)
                if kind.name == "totp", entry.totp == nil, let seed = content, !seed.isEmpty {
                    entry.setTOTP(seed, label: title)
                } else {
                    add(name, content)
                }
            }
        }
        if let document = details["documentAttributes"], case .object = document { add("file", try file(document)) }
        for tag in overview["tags"]?.elements ?? [] { add("tag", tag.string) }
        // Archived (or any state but active, trashed included) is kept: it is not an active login.
        if let state = item["state"]?.string, state != "active" { add("state", state) }
        // Kept in the order they were used, by their times when each has one.
        var history = details["passwordHistory"]?.elements ?? []
        let times = history.map { $0["time"]?.double }
        if times.allSatisfy({ $0 != nil }) { history = zip(history, times).sorted { $0.1! < $1.1! }.map(\.0) }
        for old in history { add("previous password", old["value"]?.string) }
        return (entry, files)
    }
}
