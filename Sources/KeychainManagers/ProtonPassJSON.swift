import KeychainFormats
import KeychainSystem

/// Proton Pass's unencrypted export: a zip holding `Proton Pass/data.json`, or that file alone:
/// `{version, userId, encrypted, vaults: {SHAREID: {name, description, items: […]}}}`, each item
/// `{itemId, state (1 active, 2 trashed), aliasEmail, data: {type, metadata: {name, note},
/// content, extraFields: [{fieldName, type, data: {content | totpUri}}]}}`, its type `login`
/// (itemUsername, itemEmail, password, urls, totpUri, passkeys), `note`, `alias`, `creditCard`,
/// `identity`, `sshKey`, `wifi` or `custom` (their content's members, extra fields and sections).
enum ProtonPassJSON {
    static let what = "a Proton Pass export"
    static let member = "Proton Pass/data.json"

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        var bytes = input.bytes
        var export = ManagerExport()
        if let members = input.zipMembers {
            if members.contains(where: { $0.name.hasSuffix("data.pgp") }) {
                throw encrypted(source)
            }
            guard let data = members.first(where: { $0.name == member }) else {
                throw FormatError(
                    "\(source) is a zip without \(member), so not \(what); nothing was stored. "
                        + "Export again from Proton Pass (Settings > Export, not encrypted)")
            }
            bytes = data.bytes
            for other in members where other.name != member {
                export.notImported.append(
                    "the zip's file \(quotedValue(other.name, expected: "a file name")) is not imported "
                        + "(data.json does not say whose it is): store it with keychain-cli set --from-file")
            }
        }
        let text = try JSONExport.text(of: bytes, source: source, what: what)
        let root = try JSONExport.document(text[...], source: source, what: what)
        if root["encrypted"]?.isSet == true { throw encrypted(source) }
        guard let vaults = root["vaults"]?.members else {
            throw FormatError(
                "\(source) is not \(what) (it has no object of vaults); nothing was stored. "
                    + "Export again from Proton Pass (Settings > Export), or give its CSV export")
        }
        for vault in vaults {
            let name = vault.value["name"]?.text ?? vault.name
            for (index, item) in (vault.value["items"]?.elements ?? []).enumerated() {
                let location = "\(source): vault \(quotedValue(name, expected: "a vault name")), item \(index + 1)"
                guard let data = item["data"], data.members != nil else {
                    throw FormatError(
                        "\(location) has no data object, so it is no Proton Pass item; nothing was stored")
                }
                let title = JSONExport.title(data["metadata"]?["name"]?.text)
                let described =
                    "item \(index + 1) \(quotedValue(title, expected: "a title")) of the vault "
                    + quotedValue(name, expected: "a vault name")
                if item["state"]?.text == "2" {
                    export.notImported.append("\(described) is in Proton Pass's trash: left out")
                    continue
                }
                var entry = PasswordEntry(
                    path: [name, title], password: "", notes: data["metadata"]?["note"]?.text ?? "")
                let passkeys = read(data, aliasEmail: item["aliasEmail"]?.text, into: &entry, title: title)
                if passkeys > 0 {
                    export.notImported.append("\(described) has \(passkeys) passkey(s), which cannot be kept")
                }
                export.entries.append(entry.withReadableFieldNames())
            }
        }
        return export
    }

    static func encrypted(_ source: String) -> FormatError {
        FormatError(
            "\(source) is an encrypted Proton Pass export (PGP); nothing was stored. "
                + "Export again from Proton Pass without encryption and import that, then delete it")
    }

    /// The item's content into `entry`; the number of passkeys it has (not kept).
    static func read(_ data: JSONNode, aliasEmail: String?, into entry: inout PasswordEntry, title: String) -> Int {
        var username: [PasswordEntry.Field] = []
        var urls: [PasswordEntry.Field] = []
        var others: [PasswordEntry.Field] = []
        var passkeys = 0
        func field(_ name: String, _ value: String?) {
            if let value, !value.isEmpty { others.append(.init(name, value)) }
        }
        /// Proton's extra fields: `{fieldName, type: text|hidden|totp|…, data: {content|totpUri}}`.
        func extra(_ fields: JSONNode?) {
            for extra in fields?.elements ?? [] {
                let value = extra["data"]?["content"]?.text ?? extra["data"]?["totpUri"]?.text
                if extra["type"]?.string == "totp", entry.totp == nil, let value, !value.isEmpty {
                    entry.setTOTP(value, label: title)
                } else {
                    field(extra["fieldName"]?.text ?? "field", value)
                }
            }
        }
        if data["type"]?.string == "alias", let aliasEmail, !aliasEmail.isEmpty {
            username.append(.init("username", aliasEmail))
        } else if let aliasEmail {
            field("alias", aliasEmail)
        }
        for member in data["content"]?.members ?? [] {
            let value = member.value
            switch member.name {
            case "itemUsername", "username":
                if let text = value.text, !text.isEmpty { username.append(.init("username", text)) }
            case "itemEmail": field("email", value.text)
            case "password" where entry.password.isEmpty: entry.password = value.text ?? ""
            case "urls":
                urls += (value.elements ?? []).compactMap { $0.text }.filter { !$0.isEmpty }.map { .init("url", $0) }
            case "totpUri" where entry.totp == nil: entry.setTOTP(value.text ?? "", label: title)
            case "passkeys": passkeys = value.elements?.count ?? 0
            case "sections", "extraSections":
                for section in value.elements ?? [] { extra(section["sectionFields"]) }
            default:
                // An identity's extra details: lists of extra fields.
                if let list = value.elements, list.allSatisfy({ $0["fieldName"] != nil }) {
                    extra(value)
                } else {
                    field(member.name, value.text)
                }
            }
        }
        extra(data["extraFields"])
        entry.fields = Array(username.prefix(1)) + urls + username.dropFirst() + others
        return passkeys
    }
}
