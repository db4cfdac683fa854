import KeychainFormats

/// The CSV of browsers, LastPass, 1Password and KeePass: what their columns are (as their exports
/// write them, and as pass-import and Bitwarden's importers read them).
extension CSVLayout {
    /// Chrome (and Edge, Brave, Opera, Vivaldi): `name,url,username,password,note` (`note` since
    /// Chrome 118). Firefox: `url,username,password,httpRealm,formActionOrigin,guid,timeCreated,
    /// timeLastUsed,timePasswordChanged`, no title (the URL's host is). Safari and Apple
    /// Passwords: `Title,URL,Username,Password,Notes,OTPAuth`.
    static func browser(_ kind: CSVExport.Kind, header: CSVHeader) -> CSVLayout {
        switch kind {
        case .chrome:
            CSVLayout(
                manager: "Chrome",
                exportHint: "chrome://password-manager/settings (Export passwords); Edge, Brave, Opera and "
                    + "Vivaldi export the same from their password settings",
                required: ["name", "url", "username", "password"], title: ["name"], password: "password",
                username: "username", url: "url", notes: "note")
        case .firefox:
            CSVLayout(
                manager: "Firefox", exportHint: "about:logins (the ⋯ menu, Export Logins)",
                required: ["url", "username", "password"], password: "password", username: "username", url: "url")
        default:
            CSVLayout(
                manager: "Safari",
                exportHint: "Safari (File > Export > Passwords) or the Passwords app (File > Export All Passwords)",
                required: ["title", "url", "username", "password"], title: ["title"], password: "password",
                username: "username", url: "url", notes: "notes", totp: "otpauth")
        }
    }

    /// LastPass: `url,username,password,totp,extra,name,grouping,fav` (`totp` since 2021), folders
    /// nested with `\`. A secure note has the URL `http://sn`; a note of a kind (a card, a
    /// server…) has `NoteType:NAME` and `Label:value` lines in `extra`, its notes after `Notes:`.
    static var lastPass: CSVLayout {
        CSVLayout(
            manager: "LastPass", exportHint: "lastpass.com (Advanced Options > Export)",
            required: ["url", "username", "password", "extra", "name", "grouping"], title: ["name"],
            password: "password", username: "username", url: "url", totp: "totp", folder: "grouping",
            folderPath: { parts($0, "\\") }, urls: { $0.isEmpty || $0 == "http://sn" || $0 == "http://" ? [] : [$0] },
            flags: ["fav"],
            special: { entry, column, value, row in
                guard column == "extra" else { return false }
                if row["url"] == "http://sn", value.hasPrefix("NoteType:") {
                    lastPassNote(value, into: &entry)
                } else {
                    entry.notes = value
                }
                return true
            })
    }

    /// The `Label:value` lines of a LastPass note of a kind as fields, what follows `Notes:` as
    /// its notes; a line without `:` continues the value before it.
    static func lastPassNote(_ text: String, into entry: inout PasswordEntry) {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for line in lines {
            if line.hasPrefix("Notes:") {
                entry.notes = String(text[line.index(line.startIndex, offsetBy: 6)...])
                return
            }
            if let colon = line.firstIndex(of: ":") {
                let name = String(line[..<colon])
                let value = String(line[line.index(after: colon)...])
                if name == "Password", entry.password.isEmpty {
                    entry.password = value
                } else {
                    entry.fields.append(.init(name, value))
                }
            } else if !entry.fields.isEmpty {
                entry.fields[entry.fields.count - 1].value += "\n" + line
            } else if !line.isEmpty {
                entry.fields.append(.init("NoteType", String(line)))
            }
        }
        entry.fields.removeAll { $0.value.isEmpty }
    }

    /// 1Password 8: `Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes`; 7 (and 6):
    /// the columns chosen on export, `Title`, `URL`, `Username`, `Password`, `Notes`, `Type`… and
    /// every field of every kind of item; 4: `title,notes,username,password,url`.
    static var onePassword: CSVLayout {
        CSVLayout(
            manager: "1Password", exportHint: "1Password (File > Export, as CSV)",
            required: ["title", "password"], title: ["title"], password: "password", username: "username",
            url: "url", notes: "notes", totp: "otpauth", flags: ["favorite", "archived"])
    }

    /// KeePass 2: `"Account","Login Name","Password","Web Site","Comments"`. KeePassXC:
    /// `"Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"`,
    /// the group a path that starts with the root group's name, which is left out (as KeePassXC's
    /// own XML import and ``KeePassXML`` do).
    static func keePass(header: CSVHeader) -> CSVLayout {
        if header.index("account") != nil {
            return CSVLayout(
                manager: "KeePass", exportHint: "KeePass 2 (File > Export > KeePass CSV)",
                required: ["account", "login name", "password"], title: ["account"], password: "password",
                username: "login name", url: "web site", notes: "comments")
        }
        return CSVLayout(
            manager: "KeePass",
            exportHint: "KeePassXC (Database > Export > CSV File) or KeePass 2 (File > Export > KeePass CSV)",
            required: ["group", "title", "username", "password"], title: ["title"], password: "password",
            username: "username", url: "url", notes: "notes", totp: "totp", folder: "group",
            folderPath: { Array(parts($0, "/").dropFirst()) }, ignored: ["icon"])
    }
}
