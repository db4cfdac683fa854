import KeychainFormats

/// Password managers' CSV exports as ``PasswordEntry``s.
package enum CSVExport {
    /// Whose CSV it is: each manager names and orders its columns its own way.
    package enum Kind: String, CaseIterable, Sendable {
        /// Chrome, Edge, Brave, Opera and Vivaldi (name,url,username,password,note).
        case chrome
        case firefox
        /// Safari and Apple Passwords.
        case safari
        case lastpass
        case keeper
        case nordpass
        /// Bitwarden's CSV, personal and organisation.
        case bitwarden
        /// 1Password 4, 7 and 8's CSV exports.
        case onePassword = "1password"
        /// KeePass 2's and KeePassXC's CSV.
        case keepass
        case dashlane
        case enpass
        case protonpass
    }

    /// Every entry of `input`, a CSV export of `kind`.
    /// - Throws: ``FormatError`` naming the line and what is wrong, never a value.
    package static func read(_ kind: Kind, _ input: ManagerInput) throws -> ManagerExport {
        if kind == .dashlane { return try DashlaneCSV.read(input) }
        guard input.zipMembers == nil else {
            throw FormatError(
                "\(input.source) is a zip, not \(CSVLayout.article(kind)) CSV export; nothing was stored. "
                    + "Give the CSV file itself")
        }
        var rows = try CSVRows(input.bytes, source: input.source)
        var entries: [PasswordEntry] = []
        try forEachEntry(kind, &rows, source: input.source) { entries.append($0) }
        return ManagerExport(entries: entries)
    }

    /// Whether `kind`'s export is one CSV file, which ``forEachEntry(_:_:source:_:)`` reads a
    /// row at a time (Dashlane's is a zip of them).
    package static func isOneFile(_ kind: Kind) -> Bool { kind != .dashlane }

    /// Each entry of `rows`, a CSV export of `kind` (one of ``isOneFile(_:)``) that messages call
    /// `source`, given to `body` as its row is read: an export of any length is read holding one
    /// row and one entry.
    /// - Throws: ``FormatError`` naming the line and what is wrong, never a value; what `body` throws.
    package static func forEachEntry(
        _ kind: Kind, _ rows: inout CSVRows, source: String, _ body: (PasswordEntry) throws -> Void
    ) throws {
        switch kind {
        case .keeper: try KeeperCSV.forEachEntry(&rows, source: source, body)
        case .enpass: try EnpassCSV.forEachEntry(&rows, source: source, body)
        default:
            guard let first = try rows.next() else {
                throw FormatError(
                    "\(source) has no line of CSV; nothing was stored. Did the export that writes it fail?")
            }
            let header = CSVHeader(first.cells)
            let layout = try CSVLayout.of(kind, header: header, source: source)
            try layout.forEachEntry(&rows, header: header, source: source, body)
        }
    }
}

/// How a manager's CSV with a header maps to an entry: which column is the title, the password…;
/// every other column is a field, in the file's order, where it holds something.
struct CSVLayout {
    /// The manager and where its export is made, for messages.
    var manager: String
    var exportHint: String
    var required: [String]
    /// The columns whose first value that holds something is the title (the URL's host, or the
    /// line, when none does).
    var title: [String] = []
    var password: String?
    var username: String?
    var url: String?
    var notes: String?
    var totp: String?
    var folder: String?
    /// How a folder column's value is split into the folders of the path.
    var folderPath: (String) -> [String] = { $0.isEmpty ? [] : [$0] }
    /// The URLs a URL column's value holds.
    var urls: (String) -> [String] = { $0.isEmpty ? [] : [$0] }
    /// Yes-or-no columns, kept as a field only when yes (`1`, `true`).
    var flags: Set<String> = []
    /// Columns not kept (an icon's number).
    var ignored: Set<String> = []
    /// Whether a row is no entry (a folder's own row), given its cells by lowercased column.
    var skips: (_ row: [String: String]) -> Bool = { _ in false }
    /// A column read the manager's own way: true when it did (it may add fields or notes).
    var special:
        (_ entry: inout PasswordEntry, _ column: String, _ value: String, _ row: [String: String]) throws -> Bool =
            { _, _, _, _ in false }

    /// "a Chrome", "a 1Password"… for `kind`.
    static func article(_ kind: CSVExport.Kind) -> String {
        let name = managerName(kind)
        return (name.first.map { "AEIOU".contains($0) } ?? false ? "an " : "a ") + name
    }

    static func managerName(_ kind: CSVExport.Kind) -> String {
        switch kind {
        case .chrome: "Chrome"
        case .firefox: "Firefox"
        case .safari: "Safari"
        case .lastpass: "LastPass"
        case .keeper: "Keeper"
        case .nordpass: "NordPass"
        case .bitwarden: "Bitwarden"
        case .onePassword: "1Password"
        case .keepass: "KeePass"
        case .dashlane: "Dashlane"
        case .enpass: "Enpass"
        case .protonpass: "Proton Pass"
        }
    }

    /// The layout of `kind`'s CSV whose first line is `header`.
    /// - Throws: ``FormatError`` when `header` lacks the manager's columns.
    static func of(_ kind: CSVExport.Kind, header: CSVHeader, source: String) throws -> CSVLayout {
        let layout = layout(kind, header: header)
        // Another manager's columns (a LastPass file has Chrome's four, and more) say whose it is.
        if let other = otherKind(ofHeader: header, than: kind) {
            throw FormatError(
                "\(source) is not \(article(kind)) CSV export: its first line has the columns of "
                    + "\(article(other)) CSV export (\(markers[other]!.first { header.has($0) }!.joined(separator: ",")))"
                    + "; nothing was stored. Import it with --format \(other.rawValue)")
        }
        guard header.has(layout.required) else {
            let other = self.kind(ofHeader: header.names).map {
                " It looks like \(article($0)) CSV export: import it with --format \($0.rawValue)"
            }
            throw FormatError(
                "\(source) is not \(article(kind)) CSV export: its first line has no "
                    + "\(layout.required.joined(separator: ",")) columns; nothing was stored."
                    + (other ?? " Export it again from \(layout.exportHint)"))
        }
        return layout
    }

    /// Columns only one manager's CSV has (any one set of them): Chrome's, Safari's and older
    /// 1Password's have none another lacks.
    static let markers: [CSVExport.Kind: [[String]]] = [
        .bitwarden: [["login_password"]], .lastpass: [["grouping", "extra"]], .protonpass: [["vault", "createtime"]],
        .nordpass: [["cardholdername"]], .dashlane: [["username2"]], .firefox: [["formactionorigin"]],
        .keepass: [["account", "login name"], ["group", "title", "icon"]], .onePassword: [["archived", "favorite"]],
    ]

    /// The manager other than `kind` whose columns only it has are in `header`.
    static func otherKind(ofHeader header: CSVHeader, than kind: CSVExport.Kind) -> CSVExport.Kind? {
        CSVExport.Kind.allCases.first { other in
            other != kind && (markers[other] ?? []).contains { header.has($0) }
        }
    }

    /// The layout of `kind`'s CSV whose first line is `header`, whether it has its columns or not.
    static func layout(_ kind: CSVExport.Kind, header: CSVHeader) -> CSVLayout {
        switch kind {
        case .chrome, .firefox, .safari: browser(kind, header: header)
        case .lastpass: lastPass
        case .nordpass: nordPass
        case .bitwarden: bitwarden(header: header)
        case .protonpass: protonPass
        case .onePassword: onePassword
        case .keepass: keePass(header: header)
        case .dashlane: DashlaneCSV.credentials(header: header)
        // Never asked: neither has a line of column names.
        case .keeper, .enpass: CSVLayout(manager: "", exportHint: "", required: ["\u{0}"])
        }
    }

    /// Every row of `rows` after `header` as an entry, given to `body`.
    /// - Throws: ``FormatError`` for a row whose cells are not as many as the header's columns.
    func forEachEntry(
        _ rows: inout CSVRows, header: CSVHeader, source: String, _ body: (PasswordEntry) throws -> Void
    ) throws {
        let columns = Columns(self, header)
        while let row = try rows.next() {
            // A line of empty cells (a spreadsheet's, after the last row) holds nothing.
            if row.cells.allSatisfy(\.isEmpty) { continue }
            guard row.cells.count == header.names.count else {
                throw FormatError(
                    "\(source): line \(row.line) has \(row.cells.count) cells where the first line has "
                        + "\(header.names.count) columns; nothing was stored. Is a quote or a comma missing?")
            }
            if let entry = try entry(row, columns) { try body(entry) }
        }
    }

    /// Where the layout's columns are in a header, found once for all its rows.
    struct Columns {
        var names: [String], lowered: [String]
        var title: [Int], password: Int?, username: Int?, url: Int?, notes: Int?, totp: Int?, folder: Int?
        /// The other columns, in the file's order: each kept as a field (or read its own way).
        var others: [Int]

        init(_ layout: CSVLayout, _ header: CSVHeader) {
            func find(_ name: String?) -> Int? { name.flatMap { header.index($0) } }
            names = header.names
            lowered = header.names.map { $0.lowercased() }
            title = layout.title.compactMap(find)
            (password, username, url) = (find(layout.password), find(layout.username), find(layout.url))
            (notes, totp, folder) = (find(layout.notes), find(layout.totp), find(layout.folder))
            let mapped = Set(title + [password, username, url, notes, totp, folder].compactMap { $0 })
            let lowered = lowered
            others = header.names.indices.filter { !mapped.contains($0) && !layout.ignored.contains(lowered[$0]) }
        }
    }

    /// The entry of `row`, nil when it is none.
    func entry(_ row: CSVRows.Row, _ columns: Columns) throws -> PasswordEntry? {
        let cells = row.cells
        func value(_ index: Int?) -> String { index.map { cells[$0] } ?? "" }
        var byName: [String: String] = [:]
        for (name, cell) in zip(columns.lowered, cells) where byName[name] == nil { byName[name] = cell }
        if skips(byName) { return nil }
        let urls = urls(value(columns.url))
        let title =
            columns.title.lazy.map(value).first { !$0.isEmpty } ?? urls.first.map(Self.host) ?? "line \(row.line)"
        var entry = PasswordEntry(path: folderPath(value(columns.folder)) + [title], password: value(columns.password))
        if !value(columns.username).isEmpty { entry.fields.append(.init("username", value(columns.username))) }
        entry.fields += urls.map { .init("url", $0) }
        for index in columns.others {
            let (name, lowered, cell) = (columns.names[index], columns.lowered[index], cells[index])
            if try special(&entry, lowered, cell, byName) { continue }
            if flags.contains(lowered) {
                if ["1", "true", "yes"].contains(cell.lowercased()) { entry.fields.append(.init(name, cell)) }
            } else if !cell.isEmpty {
                entry.fields.append(.init(name.isEmpty ? "column \(index + 1)" : name, cell))
            }
        }
        entry.setTOTP(value(columns.totp), label: title)
        if columns.notes != nil { entry.notes = value(columns.notes) }
        return entry.withReadableFieldNames()
    }

    /// The host of `url` (what a browser shows as the login's name), or `url` when it has none.
    static func host(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.split(separator: "@").last ?? ""
        // An IPv6 address is in brackets, its colons not a port's.
        let host =
            hostAndPort.first == "["
            ? hostAndPort.prefix { $0 != "]" } + (hostAndPort.contains("]") ? "]" : "")
            : hostAndPort.prefix { $0 != ":" }
        return host.isEmpty ? url : String(host)
    }

    /// `text` split at `separator`, empty parts left out.
    static func parts(_ text: String, _ separator: Character) -> [String] {
        text.split(separator: separator).map(String.init).filter { !$0.isEmpty }
    }
}
