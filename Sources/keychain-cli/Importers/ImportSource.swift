import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

/// What `import --format` reads: keychain-cli's own export (JSON) and dotenv lines, or another
/// password manager's data, each entry one secret in ``PasswordEntry``'s layout (pass's).
enum ImportFormat: String, ExpressibleByArgument, CaseIterable {
    /// keychain-cli's export document, or a vault's plaintext.
    case json
    /// `NAME=value` lines, for --service.
    case env
    /// A pass (or gopass) store: a directory of gpg-encrypted entries, each stored as it is.
    case pass
    /// Bitwarden's unencrypted JSON export.
    case bitwarden
    /// 1Password's unencrypted export, a `.1pux` zip (its export.data, read by unzip).
    case onePassword = "1password"
    /// A KeePass database (`.kdbx`), exported by keepassxc-cli.
    case keepassxc
    /// KeePass 2's and KeePassX's XML exports, KeePass 2's and KeePassXC's CSV.
    case keepass
    /// Chrome's (and Edge's, Brave's, Opera's, Vivaldi's) CSV.
    case chrome
    case firefox
    /// Safari's and Apple Passwords' CSV.
    case safari
    case lastpass
    /// Dashlane's CSV (a zip of them) or JSON.
    case dashlane
    case keeper
    case enpass
    case nordpass
    case protonpass
    /// Aegis's JSON backup, plain or encrypted.
    case aegis
    /// andOTP's backup, plain or encrypted.
    case andotp
    /// FreeOTP+'s JSON backup.
    case freeotp
}

/// What `import` is to store, and the entries whose key an earlier one took (stored under a
/// numbered key instead).
struct ImportedItems {
    /// The items, when they are held (not ``streamed``).
    var items: [SecretToStore]
    var renamed: [(key: String, storedAs: String)] = []
    /// What the source holds that is not imported, a line each (a KeePass entry's attachments).
    var notImported: [String] = []
    /// The items of an export read again as they are stored, instead of ``items``.
    var streamed: StreamedItems?

    var count: Int { streamed?.count ?? items.count }

    /// Gives `body` the items `size` at a time (held ones: all at once).
    func forEachBatch(of size: Int, _ body: ([SecretToStore]) throws -> Void) throws {
        guard let streamed else { return try body(items) }
        try streamed.forEachBatch(of: size, body)
    }
}

extension ImportFormat {
    /// The items of `file` (standard input when nil; for pass, the store's directory) in
    /// `format` (nil: JSON or dotenv, judged by the content), checked whole before anything is
    /// stored. `database`: how a KeePass database is opened (its password's source, its key file).
    /// - Throws: ``CommandFailure`` or ``FormatError`` naming the entry and what is wrong.
    static func items(
        _ format: ImportFormat?, file: String?, service: ServiceName, timeout: Double,
        database: (password: PassphraseInput, keyFile: String?) = (.terminal, nil),
        progress: @escaping @Sendable (Int, Int) -> Void
    ) throws -> ImportedItems {
        switch format {
        case .keepassxc:
            guard let file else {
                throw CommandFailure.usage(
                    "--format keepassxc reads a .kdbx file: give its path (import --format keepassxc FILE)")
            }
            let source = KeePassDatabase(
                path: file, keyFile: database.keyFile, password: database.password, timeout: timeout)
            var xml = try source.export()
            defer { wipe(&xml) }
            return try ImportedItems(
                KeePassXML.export(of: xml, source: quotedPath(file)), service: service, source: quotedPath(file))
        case .pass:
            let store = PassStore(root: PassStore.directory(file), timeout: timeout)
            let entries = try store.entries()
            guard !entries.isEmpty else {
                throw CommandFailure.badData(
                    "the pass store \(quotedPath(store.root)) has no entries (no .gpg files); nothing was stored")
            }
            let secrets = try store.decrypt(entries) { progress($0, entries.count) }
            let (items, renamed) = try ImportFile.items(
                ofEntries: zip(entries, secrets).map { ($0.name, $1) }, service: service
            ) { "pass entry \(quotedValue(entries[$0].name, expected: "an entry name"))" }
            return ImportedItems(items: items, renamed: renamed)
        case .bitwarden, .onePassword, .keepass, .chrome, .firefox, .safari, .lastpass, .dashlane, .keeper, .enpass,
            .nordpass, .protonpass, .aegis, .andotp, .freeotp:
            return try items(
                ofManager: format!, file: file, service: service, timeout: timeout, password: database.password)
        case .json, .env, nil:
            let (text, source) = try readText(file)
            return ImportedItems(
                items: try ImportFile.items(
                    of: text, source: source, json: format.map { $0 == .json }, defaultService: service))
        }
    }

    /// The text of `file` (standard input when nil), and how messages name it.
    static func readText(_ file: String?) throws -> (String, String) {
        let source = file ?? "standard input"
        guard let bytes = try readInput(path: file, limit: 256 << 20) else {
            throw CommandFailure.badData(
                "\(file.map(quotedPath) ?? source) is larger than 256 MiB; nothing was stored. Split it into several files and import each"
            )
        }
        // UTF-16 with its byte order mark (a Windows editor's) is read too, as other exports are.
        return (try ExportText.text(bytes, source: source), source)
    }
}
