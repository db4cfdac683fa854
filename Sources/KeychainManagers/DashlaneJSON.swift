import KeychainFormats
import KeychainSystem

/// Dashlane's JSON export ("Unsecured archive (readable) in JSON" of its desktop app): an object
/// whose members are lists of items of one kind each, named as Dashlane names them inside:
/// `AUTHENTIFIANT` (credentials: title, domain, login, secondaryLogin, email, password, note),
/// `SECURENOTE` (title, content), `EMAIL`, `PHONE`, `ADDRESS`, `IDENTITY`, `PAYMENTMEANS_CREDITCARD`,
/// `PAYMENTMEAN_PAYPAL`, `BANKSTATEMENT`, `IDCARD`, `PASSPORT`, `DRIVERLICENCE`,
/// `SOCIALSECURITYSTATEMENT`, `FISCALSTATEMENT`, `COMPANY`, `PERSONALWEBSITE`, each an object of
/// text members. Credentials are entries at the top; every other kind an entry in a folder of its
/// own, every member a field.
enum DashlaneJSON {
    static let what = "a Dashlane JSON export"

    /// The folder of each kind but credentials, and the members that title its items, in order.
    static let kinds: [String: (folder: String, titles: [String])] = [
        "SECURENOTE": ("Secure notes", ["title"]),
        "EMAIL": ("Emails", ["emailName", "email"]),
        "PHONE": ("Phones", ["phoneName", "number"]),
        "ADDRESS": ("Addresses", ["addressName", "addressFull"]),
        "IDENTITY": ("Identities", ["fullName", "firstName", "pseudo"]),
        "PAYMENTMEANS_CREDITCARD": ("Payment cards", ["name", "bank", "owner"]),
        "PAYMENTMEAN_PAYPAL": ("PayPal", ["name", "login"]),
        "BANKSTATEMENT": ("Bank accounts", ["BankAccountName", "BankAccountBank"]),
        "IDCARD": ("ID cards", ["Fullname", "fullname", "number"]),
        "PASSPORT": ("Passports", ["Fullname", "fullname", "number"]),
        "DRIVERLICENCE": ("Driver licences", ["Fullname", "fullname", "number"]),
        "SOCIALSECURITYSTATEMENT": ("Social security numbers", ["SocialSecurityFullname", "Fullname", "fullname"]),
        "FISCALSTATEMENT": ("Tax numbers", ["fiscalNumber"]),
        "COMPANY": ("Companies", ["name"]),
        "PERSONALWEBSITE": ("Websites", ["name", "website"]),
    ]

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        let source = input.source
        let text = try JSONExport.text(of: input.bytes, source: source, what: what)
        let root = try JSONExport.document(text[...], source: source, what: what)
        let lists = root.members ?? []
        guard !lists.isEmpty,
            lists.allSatisfy({ $0.value.elements != nil && $0.name.allSatisfy { $0.isUppercase || $0 == "_" } })
        else {
            throw FormatError(
                "\(source) is not \(what) (an object of lists such as AUTHENTIFIANT); nothing was stored. "
                    + "Export again from Dashlane as the unsecured archive in JSON, or give its CSV export")
        }
        var entries: [PasswordEntry] = []
        for list in lists {
            for (index, value) in list.value.elements!.enumerated() {
                let location = "\(source): \(list.name) item \(index + 1)"
                guard let members = value.members else {
                    throw FormatError("\(location) is not an object; nothing was stored")
                }
                let entry =
                    list.name == "AUTHENTIFIANT"
                    ? credential(members) : other(members, kind: list.name, number: index + 1)
                entries.append(entry.withReadableFieldNames())
            }
        }
        return ManagerExport(entries: entries)
    }

    /// A credential: its title, password, login as `username`, domain as `url`, note as the notes,
    /// a TOTP seed (`otpSecret`, `otpUrl`) as the TOTP, every other member a field.
    static func credential(_ members: [JSONNode.Member]) -> PasswordEntry {
        func value(_ name: String) -> String? {
            members.first { $0.name == name }?.value.text.flatMap { $0.isEmpty ? nil : $0 }
        }
        let title = JSONExport.title(value("title") ?? value("domain"))
        var entry = PasswordEntry(path: [title], password: value("password") ?? "", notes: value("note") ?? "")
        entry.addNonEmpty("username", value("login"))
        entry.addNonEmpty("url", value("domain"))
        for member in members {
            guard let text = member.value.text, !text.isEmpty else { continue }
            switch member.name {
            case "title", "password", "note", "login", "domain": continue
            case "otpSecret" where entry.totp == nil, "otpUrl" where entry.totp == nil:
                entry.setTOTP(text, label: title)
            default: entry.addNonEmpty(member.name, text)
            }
        }
        return entry
    }

    /// An item of another kind, in the kind's folder: titled by its first title member that is
    /// not empty (else `KIND N`), its `note` or `content` the notes, every member else a field
    /// (the title's too).
    static func other(_ members: [JSONNode.Member], kind: String, number: Int) -> PasswordEntry {
        let known = kinds[kind] ?? (folder: kind, titles: ["title", "name"])
        let titleMember = known.titles.first { name in members.contains { $0.name == name && $0.value.text != "" } }
        let title = titleMember.flatMap { name in members.first { $0.name == name }?.value.text } ?? "\(kind) \(number)"
        var entry = PasswordEntry(path: [known.folder, title], password: "")
        // The member that titles it is a field too: a title made a key loses what a `/` in it held.
        for member in members {
            if member.name == "note" || member.name == "content", entry.notes.isEmpty {
                entry.notes = member.value.text ?? ""
            } else if member.name == "password", entry.password.isEmpty {
                entry.password = member.value.text ?? ""
            } else {
                entry.addNonEmpty(member.name, member.value.text)
            }
        }
        return entry
    }
}
