import KeychainFormats
import KeychainSystem

/// Dashlane's CSV export: a zip of `credentials.csv` (`username,username2,username3,title,
/// password,note,url,category,otpSecret`, `otpUrl` in newer ones), `securenotes.csv`
/// (`title,note`, and `category` where it has one), and `ids.csv`, `payments.csv`,
/// `personalInfo.csv`, which are not imported; or one of the first two alone.
enum DashlaneCSV {
    static func credentials(header: CSVHeader) -> CSVLayout {
        CSVLayout(
            manager: "Dashlane", exportHint: "Dashlane (Settings > Export data, CSV)",
            required: ["username", "title", "password", "url"], title: ["title"], password: "password",
            username: "username", url: "url", notes: "note",
            totp: header.index("otpurl") != nil && header.index("otpsecret") == nil ? "otpUrl" : "otpSecret",
            folder: "category")
    }

    static var secureNotes: CSVLayout {
        CSVLayout(
            manager: "Dashlane", exportHint: "Dashlane (Settings > Export data, CSV)", required: ["title", "note"],
            title: ["title"], notes: "note", folder: "category")
    }

    /// What each member of the zip that is not imported holds, by its name.
    static let others = [
        "ids.csv": "IDs (passports, ID cards, licences)", "payments.csv": "payment cards and bank accounts",
        "personalinfo.csv": "personal information (names, addresses, phone numbers)",
    ]

    static func read(_ input: ManagerInput) throws -> ManagerExport {
        guard let members = input.zipMembers else {
            return ManagerExport(entries: try entries(of: input.bytes, source: input.source, member: nil))
        }
        var export = ManagerExport()
        var read = false
        for (name, bytes) in members {
            let base = String(name.split(separator: "/").last ?? "").lowercased()
            let location = "\(input.source), \(quotedValue(name, expected: "a file name"))"
            if base == "credentials.csv" || base == "securenotes.csv" {
                export.entries += try entries(of: bytes, source: location, member: base)
                read = true
            } else if base.hasSuffix(".csv") {
                var rows = try CSVRows(bytes, source: location)
                var count = -1
                while try rows.next() != nil { count += 1 }
                if count > 0 {
                    export.notImported.append(
                        "\(location): \(count) \(count == 1 ? "row" : "rows") of "
                            + "\(others[base] ?? "another kind of item"), not imported (only logins and secure notes are)"
                    )
                }
            } else if !name.hasSuffix("/") {
                export.notImported.append("\(location): not imported (a file that is no CSV)")
            }
        }
        guard read else {
            throw FormatError(
                "\(input.source) is not a Dashlane CSV export: the zip holds no credentials.csv or securenotes.csv; "
                    + "nothing was stored. Export it again from Dashlane (Settings > Export data, CSV)")
        }
        return export
    }

    /// The entries of `bytes`, credentials.csv or securenotes.csv (`member`, or either when nil).
    private static func entries(of bytes: [UInt8], source: String, member: String?) throws -> [PasswordEntry] {
        var rows = try CSVRows(bytes, source: source)
        guard let first = try rows.next() else { return [] }
        let header = CSVHeader(first.cells)
        let layout: CSVLayout
        if member != "securenotes.csv", header.has(credentials(header: header).required) {
            layout = credentials(header: header)
        } else if member != "credentials.csv", header.has(secureNotes.required) {
            layout = secureNotes
        } else {
            let other =
                member == nil
                ? CSVLayout.kind(ofHeader: first.cells).map {
                    " It looks like \(CSVLayout.article($0)) CSV export: import it with --format \($0.rawValue)"
                } : nil
            throw FormatError(
                "\(source) is not a Dashlane CSV export: its first line has no username,title,password,url columns "
                    + "(credentials.csv) nor title,note (securenotes.csv); nothing was stored."
                    + (other ?? " Export it again from Dashlane (Settings > Export data, CSV)"))
        }
        var entries: [PasswordEntry] = []
        try layout.forEachEntry(&rows, header: header, source: source) { entries.append($0) }
        return entries
    }
}
