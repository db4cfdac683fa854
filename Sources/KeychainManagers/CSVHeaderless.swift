import KeychainFormats

/// Keeper's CSV: no header line; each line `folder,title,login,password,url,notes`, the shared
/// folder, then a name and a value for each custom field (`TFC:Keeper` is the TOTP); folders
/// nest with `\` (Keeper's import and export, and Bitwarden's Keeper importer, read it so).
enum KeeperCSV {
    /// Each entry of `rows`, a Keeper CSV export that messages call `source`, given to `body`.
    static func forEachEntry(
        _ rows: inout CSVRows, source: String, _ body: (PasswordEntry) throws -> Void
    ) throws {
        var first = true
        while let row = try rows.next() {
            if row.cells.allSatisfy(\.isEmpty) { continue }
            if first, let other = CSVLayout.kind(ofHeader: row.cells) {
                throw FormatError(
                    "\(source) is not a Keeper CSV export: Keeper's has no line of column names, and its first line "
                        + "has \(CSVLayout.article(other)) CSV export's; nothing was stored. Import it with --format \(other.rawValue)"
                )
            }
            first = false
            let cells = row.cells
            guard cells.count >= 6, cells.count <= 7 || (cells.count - 7) % 2 == 0 else {
                throw FormatError(
                    "\(source): line \(row.line) has \(cells.count) cells, so it is no line of a Keeper CSV export "
                        + "(folder,title,login,password,url,notes, the shared folder, then a name and a value for each "
                        + "custom field); nothing was stored. Export it again from Keeper (Settings > Export > CSV)")
            }
            let title = !cells[1].isEmpty ? cells[1] : !cells[4].isEmpty ? CSVLayout.host(cells[4]) : "line \(row.line)"
            let shared = cells.count > 6 ? cells[6] : ""
            let folder = cells[0].isEmpty ? shared : cells[0]
            var entry = PasswordEntry(
                path: CSVLayout.parts(folder, "\\") + [title], password: cells[3], notes: cells[5])
            if !cells[2].isEmpty { entry.fields.append(.init("username", cells[2])) }
            if !cells[4].isEmpty { entry.fields.append(.init("url", cells[4])) }
            if !cells[0].isEmpty, !shared.isEmpty { entry.fields.append(.init("shared folder", shared)) }
            var index = 7
            while index + 1 < cells.count {
                let (name, value) = (cells[index], cells[index + 1])
                index += 2
                if name == "TFC:Keeper", entry.totp == nil {
                    entry.setTOTP(value, label: title)
                } else if !value.isEmpty {
                    entry.fields.append(.init(name.isEmpty ? "custom field" : name, value))
                }
            }
            try body(entry.withReadableFieldNames())
        }
    }
}

/// Enpass's CSV: each line the title, then a label and a value for each field, then the note
/// (a line of even length has it); a first line `"Title","Field","Value",…,"Note"` is skipped.
/// A label of a hidden field starts with `*`, which is left out.
enum EnpassCSV {
    /// Each entry of `rows`, an Enpass CSV export that messages call `source`, given to `body`.
    static func forEachEntry(
        _ rows: inout CSVRows, source: String, _ body: (PasswordEntry) throws -> Void
    ) throws {
        var first = true
        while let row = try rows.next() {
            if row.cells.allSatisfy(\.isEmpty) { continue }
            defer { first = false }
            let cells = row.cells
            if first, cells.first?.lowercased() == "title", cells.count > 1, cells[1].lowercased() == "field" {
                continue
            }
            if first, let other = CSVLayout.kind(ofHeader: cells) {
                throw FormatError(
                    "\(source) is not an Enpass CSV export: its first line has the columns of "
                        + "\(CSVLayout.article(other)) CSV export; nothing was stored. Import it with --format \(other.rawValue)"
                )
            }
            let title = cells[0].isEmpty ? "line \(row.line)" : cells[0]
            var entry = PasswordEntry(path: [title], password: "")
            let end = cells.count % 2 == 0 ? cells.count - 1 : cells.count
            if end < cells.count { entry.notes = cells[end] }
            var username: String?
            var password: String?
            var totp: String?
            var urls: [String] = []
            var others: [PasswordEntry.Field] = []
            var index = 1
            while index + 1 <= end - 1 {
                let label = cells[index].hasPrefix("*") ? String(cells[index].dropFirst()) : cells[index]
                let value = cells[index + 1]
                index += 2
                guard !value.isEmpty else { continue }
                switch label.lowercased() {
                case "username" where username == nil: username = value
                case "password" where password == nil: password = value
                case "url", "website": urls.append(value)
                case "totp" where totp == nil, "one-time code" where totp == nil: totp = value
                default: others.append(.init(label.isEmpty ? "field" : label, value))
                }
            }
            entry.password = password ?? ""
            if let username { entry.fields.append(.init("username", username)) }
            entry.fields += urls.map { .init("url", $0) } + others
            if let totp { entry.setTOTP(totp, label: title) }
            try body(entry.withReadableFieldNames())
        }
    }
}

extension CSVLayout {
    /// The manager whose CSV has the column names `cells`, nil when none has.
    static func kind(ofHeader cells: [String]) -> CSVExport.Kind? {
        let header = CSVHeader(cells)
        if let kind = otherKind(ofHeader: header, than: .keeper) { return kind }
        let kinds: [CSVExport.Kind] = [.safari, .chrome, .onePassword, .firefox]
        return kinds.first { header.has(layout($0, header: header).required) }
    }
}
