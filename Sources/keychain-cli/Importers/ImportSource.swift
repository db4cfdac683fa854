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
}

/// What `import` is to store, and the entries whose key an earlier one took (stored under a
/// numbered key instead).
struct ImportedItems {
    var items: [SecretToStore]
    var renamed: [(key: String, storedAs: String)] = []
    /// What the source holds that is not imported, a line each (a KeePass entry's attachments).
    var notImported: [String] = []
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
            let read = try source.database()
            let (items, renamed) = try ImportFile.items(
                ofEntries: read.entries.map { ($0.key, Data($0.text.utf8)) }, service: service
            ) { "\(quotedPath(file)): entry \(quotedValue(read.entries[$0].key, expected: "an entry name"))" }
            let notImported = read.attachments.map {
                "the entry \(quotedValue($0.entry, expected: "an entry name")) has the attachment "
                    + "\(quotedValue($0.name, expected: "a file name")), which is not imported "
                    + "(save it with keepassxc-cli attachment-export, then store it with keychain-cli set --from-file)"
            }
            return ImportedItems(items: items, renamed: renamed, notImported: notImported)
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
        case .bitwarden:
            let (text, source) = try readText(file)
            let entries = try BitwardenExport.entries(of: text, source: source)
            let (items, renamed) = try ImportFile.items(
                ofEntries: entries.map { ($0.key, Data($0.text.utf8)) }, service: service
            ) { "\(source): item \($0 + 1)" }
            return ImportedItems(items: items, renamed: renamed)
        case .onePassword:
            guard let file else {
                throw CommandFailure.usage(
                    "--format 1password reads a .1pux file: give its path (import --format 1password FILE)")
            }
            let (data, source) = try exportData(of1PUX: file, timeout: timeout)
            let export = try OnePasswordExport.export(ofData: data, source: source)
            // Each file (a Document's, a file field's) is a secret of its own beside its entry.
            var entries = export.entries.map { (key: $0.key, secret: Data($0.text.utf8)) }
            var notImported: [String] = []
            let entryKeys = Set(entries.map(\.key))
            if !export.files.isEmpty { try checkMembers(export.files.map(\.member), of1PUX: file, timeout: timeout) }
            for document in export.files {
                // The entry names its file by this key: another entry may not have it.
                guard !entryKeys.contains("\(document.entry)/\(document.name)") else {
                    throw CommandFailure.badData(
                        "\(source): the file \(quotedValue(document.name, expected: "a file name")) of "
                            + "\(quotedValue(document.entry, expected: "an entry name")) would be stored under the key of "
                            + "another entry; nothing was stored. Rename one of them in 1Password and export again")
                }
                if let bytes = try member(document.member, of1PUX: file, timeout: timeout) {
                    entries.append(("\(document.entry)/\(document.name)", Data(bytes)))
                } else {
                    notImported.append(
                        "the entry \(quotedValue(document.entry, expected: "an entry name")) has the file "
                            + "\(quotedValue(document.name, expected: "a file name")), which is not imported: it is larger "
                            + "than 1 MiB, the largest secret")
                }
            }
            let (items, renamed) = try ImportFile.items(
                ofEntries: entries, service: service
            ) { "\(source): entry \(quotedValue(entries[$0].key, expected: "an entry name"))" }
            return ImportedItems(items: items, renamed: renamed, notImported: notImported)
        case .json, .env, nil:
            let (text, source) = try readText(file)
            return ImportedItems(
                items: try ImportFile.items(
                    of: text, source: source, json: format.map { $0 == .json }, defaultService: service))
        }
    }

    /// unzip with `options` on the `.1pux` zip `file` (for `member`, when given): its output in
    /// memory, at most `limit` bytes, within `timeout` (at least 60 s); nil when it took longer.
    /// Away from the terminal: a zip with a password would have unzip ask for it there.
    private static func unzip(_ options: [String], _ file: String, _ member: String? = nil, timeout: Double, limit: Int)
        throws -> ToolRun?
    {
        try ToolRun.run(
            ["unzip"] + options + [ToolRun.pathArgument(file)] + (member.map { [$0] } ?? []), timeout: max(timeout, 60),
            limit: limit, awayFromTerminal: true,
            installHint: "1Password's .1pux files are zip files, read with unzip (apt-get install unzip)")
    }

    /// Refuses a zip that holds one of `members` twice (unzip would give both, one after the
    /// other, as one file's bytes).
    private static func checkMembers(_ members: [String], of1PUX file: String, timeout: Double) throws {
        guard let run = try unzip(["-Z1"], file, timeout: timeout, limit: 64 << 20), run.succeeded, !run.tooLarge
        else {
            throw CommandFailure.badData(
                "the list of the files in \(quotedPath(file)) could not be read; nothing was stored")
        }
        var counts: [Substring: Int] = [:]
        for line in String(decoding: run.output, as: UTF8.self).split(separator: "\n") { counts[line, default: 0] += 1 }
        if let twice = members.first(where: { counts[Substring($0), default: 0] > 1 }) {
            throw CommandFailure.badData(
                "\(quotedPath(file)) holds \(quotedValue(twice, expected: "a file name")) twice; nothing was stored. "
                    + "Export again from 1Password: File > Export, 1PUX")
        }
    }

    /// The bytes of the member `name` of the `.1pux` zip `file` (read by unzip into memory), nil
    /// when it is larger than a secret may be.
    /// - Throws: ``CommandFailure`` (65) when the zip has no such member.
    private static func member(_ name: String, of1PUX file: String, timeout: Double) throws -> [UInt8]? {
        // unzip reads a member's name as a pattern: its wildcard characters are escaped.
        let pattern = name.map { "[]*?\\".contains($0) ? "\\\($0)" : String($0) }.joined()
        let run = try unzip(["-p"], file, pattern, timeout: timeout, limit: maximumSecretSize)
        guard let run else {
            throw CommandFailure(
                kind: .timedOut, message: "unzip did not read \(quotedPath(file)) in time; nothing was stored")
        }
        if run.tooLarge { return nil }
        guard run.succeeded else {
            throw CommandFailure.badData(
                "\(quotedPath(file)) has no \(quotedValue(name, expected: "a file name")), which its export.data names "
                    + "(\(run.reason)); nothing was stored. Export again from 1Password: File > Export, 1PUX")
        }
        return run.output
    }

    /// The text of the `export.data` member of the `.1pux` zip `file`, read by unzip into memory
    /// (a zip is read from a file, not a pipe), and how messages name the file.
    private static func exportData(of1PUX file: String, timeout: Double) throws -> (String, String) {
        guard access(file, R_OK) == 0 else {
            throw CommandFailure(
                kind: .io,
                message: "cannot read \(quotedPath(file)) (\(String(cString: strerror(errno)))); nothing was stored")
        }
        let run = try unzip(["-p"], file, "export.data", timeout: timeout, limit: 256 << 20)
        guard let run else {
            throw CommandFailure(
                kind: .timedOut, message: "unzip did not read \(quotedPath(file)) in time; nothing was stored")
        }
        guard !run.tooLarge else {
            throw CommandFailure.badData(
                "the export.data of \(quotedPath(file)) is larger than 256 MiB; nothing was stored")
        }
        guard run.succeeded, !run.output.isEmpty else {
            throw CommandFailure.badData(
                "\(quotedPath(file)) is not a 1Password export (.1pux): \(run.reason); nothing was stored. "
                    + "Export again from 1Password: File > Export, 1PUX")
        }
        guard let text = String(validating: run.output, as: UTF8.self) else {
            throw CommandFailure.badData("the export.data of \(quotedPath(file)) is not UTF-8 text; nothing was stored")
        }
        return (text, quotedPath(file))
    }

    /// The text of `file` (standard input when nil), and how messages name it.
    private static func readText(_ file: String?) throws -> (String, String) {
        let source = file ?? "standard input"
        guard let bytes = try readInput(path: file, limit: 256 << 20) else {
            throw CommandFailure.badData(
                "\(file.map(quotedPath) ?? source) is larger than 256 MiB; nothing was stored. Split it into several files and import each"
            )
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CommandFailure.badData("\(source) is not UTF-8 text; nothing was stored")
        }
        return (text, source)
    }
}
