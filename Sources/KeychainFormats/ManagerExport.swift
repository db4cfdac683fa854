/// What another password manager's (or authenticator app's) export gives `import`: its entries in
/// ``PasswordEntry``'s layout, the files kept beside them, and what it holds that is not kept.
package struct ManagerExport: Sendable {
    package var entries: [PasswordEntry]
    /// Files stored as secrets of their own beside their entry, under `ENTRY/NAME`.
    package var files: [ManagerFile]
    /// What the export holds that is not imported, a line each for standard error (what and
    /// where, never a value): a card, an identity, an attachment the export has no bytes of.
    package var notImported: [String]

    package init(entries: [PasswordEntry] = [], files: [ManagerFile] = [], notImported: [String] = []) {
        self.entries = entries
        self.files = files
        self.notImported = notImported
    }
}

/// A file of an entry (an attachment, a document), stored under `ENTRY/NAME`.
package struct ManagerFile: Sendable, Equatable {
    /// The key of its entry (``PasswordEntry/key``).
    package var entry: String
    /// Its name beside the entry: its own, with ` (2)`… after it when an earlier file of the
    /// entry has it; never holding `/`.
    package var name: String
    package var bytes: [UInt8]

    package init(entry: String, name: String, bytes: [UInt8]) {
        self.entry = entry
        self.name = name
        self.bytes = bytes
    }
}

/// An export as `import` hands it to a reader: its bytes (or, for a zip, its members), how
/// messages name it, and how to get the password of an encrypted one.
package struct ManagerInput {
    /// The file's bytes as they are (byte order mark and all); empty for a zip.
    package var bytes: [UInt8]
    /// A zip's members in the zip's order, each name as the zip has it; nil when the file is no zip.
    package var zipMembers: [(name: String, bytes: [UInt8])]?
    /// The file as messages name it: a quoted path, or `standard input`.
    package var source: String
    /// The export's password, asked only when a reader finds the export encrypted (from
    /// `--source-passphrase-file`/`-fd` or the terminal). The caller wipes what it returns.
    package var password: () throws -> [UInt8]

    package init(
        bytes: [UInt8], zipMembers: [(name: String, bytes: [UInt8])]? = nil, source: String,
        password: @escaping () throws -> [UInt8] = { throw FormatError("this export needs no password") }
    ) {
        self.bytes = bytes
        self.zipMembers = zipMembers
        self.source = source
        self.password = password
    }
}
