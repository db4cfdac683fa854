import FoundationEssentials
import KeychainFormats

/// The CSV of Bitwarden, NordPass and Proton Pass: what their columns are (as their exports write
/// them, and as pass-import and Bitwarden's importers read them).
extension CSVLayout {
    /// Bitwarden: `folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,
    /// login_password,login_totp`; the organisation's export has `collections` for `folder`.
    /// Only logins and secure notes are in it (its `type`); `login_uri` holds the URLs joined
    /// by commas, `fields` the custom fields as `name: value` lines; folders nest with `/`.
    static func bitwarden(header: CSVHeader) -> CSVLayout {
        let organisation = header.index("folder") == nil && header.index("collections") != nil
        return CSVLayout(
            manager: "Bitwarden", exportHint: "Bitwarden (Tools > Export vault, File format .csv)",
            required: ["type", "name", "login_uri", "login_username", "login_password"], title: ["name"],
            password: "login_password", username: "login_username", url: "login_uri", notes: "notes",
            totp: "login_totp", folder: organisation ? "collections" : "folder",
            folderPath: { parts(String($0.split(separator: ",").first ?? ""), "/") },
            urls: { $0.split(separator: ",").map { $0.trimmingBOMAndSpaces() }.filter { !$0.isEmpty } },
            flags: ["favorite", "reprompt"],
            special: { entry, column, value, _ in
                switch column {
                case "type":
                    // login or note: what the entry holds says it.
                    return ["login", "note"].contains(value) || value.isEmpty
                case "fields":
                    // A field without a value (`name:`, or a name alone) holds nothing to keep.
                    for line in value.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
                        // By bytes, as EntryFields splits a line.
                        let bytes = line.utf8
                        guard
                            let colon = bytes.indices.first(where: {
                                bytes[$0] == 0x3A && bytes.index(after: $0) < bytes.endIndex
                                    && bytes[bytes.index(after: $0)] == 0x20
                            })
                        else { continue }
                        let start = bytes.index(colon, offsetBy: 2)
                        if start < bytes.endIndex {
                            entry.fields.append(
                                .init(String(Substring(bytes[..<colon])), String(Substring(bytes[start...]))))
                        }
                    }
                    return true
                default:
                    return false
                }
            })
    }

    /// NordPass: `name,url,additional_urls,username,password,note,cardholdername,cardnumber,cvc,
    /// pin,expirydate,zipcode,folder,full_name,phone_number,email,address1,address2,city,country,
    /// state,type,custom_fields` (older exports lack `additional_urls`, `pin`, `type` and
    /// `custom_fields`); a folder is a row of its own (`type` `folder`, or a name alone), cards
    /// and identities rows whose columns are kept as fields.
    static var nordPass: CSVLayout {
        CSVLayout(
            manager: "NordPass", exportHint: "NordPass (Settings > Export Items)",
            required: ["name", "url", "username", "password", "note", "folder"], title: ["name"],
            password: "password", username: "username", url: "url", notes: "note", folder: "folder",
            folderPath: { parts($0, "/") },
            skips: { row in
                row["type"] == "folder"
                    || (row["type"] ?? "").isEmpty
                        && row.allSatisfy { $0.key == "name" || $0.key == "type" || $0.value.isEmpty }
            },
            special: { entry, column, value, _ in
                switch column {
                case "type": return ["password", "note"].contains(value)
                case "additional_urls":
                    guard let urls = try? JSONDecoder().decode([String].self, from: Data(value.utf8)) else {
                        return false
                    }
                    entry.fields += urls.filter { !$0.isEmpty }.map { .init("url", $0) }
                    return true
                default: return false
                }
            })
    }

    /// Proton Pass: `type,name,url,email,username,password,note,totp,createTime,modifyTime,vault`
    /// (`username` since 2024; newer ones `autofillUrls` after `url`: every URL with its autofill
    /// mode as JSON, `url` those of the default mode joined by `, `); a card's or an identity's
    /// fields are JSON in its note, kept as it is; the vault is the folder.
    static var protonPass: CSVLayout {
        CSVLayout(
            manager: "Proton Pass", exportHint: "Proton Pass (Settings > Export, CSV)",
            required: ["type", "name", "url", "password", "note", "vault"], title: ["name"], password: "password",
            username: "username", url: "url", notes: "note", totp: "totp", folder: "vault",
            urls: { $0.split(separator: ",").map { $0.trimmingBOMAndSpaces() }.filter { !$0.isEmpty } },
            special: { entry, column, value, _ in
                switch column {
                case "type": return ["login", "note"].contains(value)
                case "autofillurls":
                    // The URLs not in `url` (another mode than the default), the modes left out.
                    struct Rule: Decodable { var url: String }
                    guard let rules = try? JSONDecoder().decode([Rule].self, from: Data(value.utf8)) else {
                        return false
                    }
                    let known = Set(entry.fields.filter { $0.name == "url" }.map(\.value))
                    entry.fields += rules.map(\.url).filter { !$0.isEmpty && !known.contains($0) }.map {
                        .init("url", $0)
                    }
                    return true
                default: return false
                }
            })
    }
}
