import FoundationEssentials
import Glibc
import KeychainCore

/// Other password managers' and authenticator apps' exports read whole into memory (a zip's
/// members by unzip), the reader chosen by the format and, where a manager exports more than
/// one kind of file, by what the file is.
extension ImportFormat {
    /// The items of `file` (standard input when nil), an export of `format`'s manager.
    static func items(
        ofManager format: ImportFormat, file: String?, service: ServiceName, timeout: Double, password: PassphraseInput
    ) throws -> ImportedItems {
        let stream = try ExportStream(path: file)
        let source = stream.source
        guard let first = try stream.kindByte() else {
            throw FormatError("\(source) is empty; nothing was stored. Did the export that writes it fail?")
        }
        let json = first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
        if let kind = CSVExport.Kind(rawValue: format.rawValue), CSVExport.isOneFile(kind), !json,
            !ExportText.isZip(stream.head), !(format == .keepass && first == UInt8(ascii: "<")),
            !(format == .onePassword && first == UInt8(ascii: "*"))
        {
            return try streamedItems(kind, stream, service: service)
        }
        guard let bytes = try stream.bytes(limit: 256 << 20) else { throw stream.tooLarge(256 << 20) }
        var input = ManagerInput(bytes: bytes, source: source) {
            try password.readOther(
                "password of \(source)", asking: "Password of the export \(file ?? "on standard input"): ",
                options: "--source-passphrase-file PATH or --source-passphrase-fd N")
        }
        if ExportText.isZip(bytes) {
            guard let file else {
                throw CommandFailure.usage(
                    "standard input holds a zip, and a zip is read from a file: give its path (import --format \(format.rawValue) FILE)"
                )
            }
            if format == .onePassword { return try items(of1PUX: file, service: service, timeout: timeout) }
            input.bytes = []
            input.zipMembers = try zipMembers(of: file, timeout: timeout)
        }
        let export: ManagerExport
        switch format {
        case .bitwarden where json:
            let text = try ExportText.text(bytes, source: source, what: "a Bitwarden JSON export")
            export = ManagerExport(entries: try BitwardenExport.entries(of: text, source: source))
        case .onePassword where json || first == UInt8(ascii: "*"):
            export = try JSONExport.read(.onePasswordInterchange, input)
        case .keepass where first == UInt8(ascii: "<"):
            export = try KeePassXML.export(of: bytes, source: source)
        case .dashlane where json, .enpass where json, .protonpass where json || input.zipMembers != nil:
            export = try JSONExport.read(JSONExport.Kind(rawValue: format.rawValue)!, input)
        case .aegis, .andotp, .freeotp:
            export = try OTPExport.read(OTPExport.Kind(rawValue: format.rawValue)!, input)
        default:
            guard let kind = CSVExport.Kind(rawValue: format.rawValue) else {
                throw CommandFailure.usage("--format \(format.rawValue) is not read from a file of this kind")
            }
            export = try CSVExport.read(kind, input)
        }
        return try ImportedItems(export, service: service, source: source)
    }

    /// The items of `stream`, a CSV export of `kind`, read a row at a time (see ``StreamedItems``):
    /// a file from where it is, twice; standard input that is no file held to be read twice.
    private static func streamedItems(_ kind: CSVExport.Kind, _ stream: ExportStream, service: ServiceName) throws
        -> ImportedItems
    {
        let rows: () throws -> CSVRows
        if stream.isRegular {
            rows = { try CSVRows(pieces: stream.pieces(limit: 256 << 20), source: stream.source) }
        } else {
            guard let bytes = try stream.bytes(limit: 256 << 20) else { throw stream.tooLarge(256 << 20) }
            rows = { try CSVRows(bytes, source: stream.source) }
        }
        let (items, renamed) = try StreamedItems.checked(kind, rows: rows, source: stream.source, service: service)
        return ImportedItems(items: [], renamed: renamed, streamed: items)
    }

    /// Every member of the zip `file` and its bytes, in the zip's order, read by unzip.
    /// - Throws: ``CommandFailure`` (65) for a zip unzip cannot read or with a member read twice.
    private static func zipMembers(of file: String, timeout: Double) throws -> [(name: String, bytes: [UInt8])] {
        guard let run = try unzip(["-Z1"], file, timeout: timeout, limit: 64 << 20), run.succeeded, !run.tooLarge else {
            throw CommandFailure.badData("\(quotedPath(file)) is not a zip unzip can read; nothing was stored")
        }
        let names = String(decoding: run.output, as: UTF8.self).split(separator: "\n").map(String.init)
        guard Set(names).count == names.count else {
            throw CommandFailure.badData("\(quotedPath(file)) holds a file twice; nothing was stored. Export it again")
        }
        return try names.filter { !$0.hasSuffix("/") }.map { name in
            guard let bytes = try member(name, of1PUX: file, timeout: timeout) else {
                throw CommandFailure.badData(
                    "\(quotedPath(file)) holds \(quotedValue(name, expected: "a file name")), larger than 1 MiB; "
                        + "nothing was stored")
            }
            return (name, bytes)
        }
    }
}

extension ImportedItems {
    /// The items of `export`: each entry under its key, each file under `ENTRY/NAME`, stored under
    /// `service`.
    /// - Throws: ``CommandFailure`` (65) when a file would take an entry's key.
    init(_ export: ManagerExport, service: ServiceName, source: String) throws {
        var entries = export.entries.map { (key: $0.key, secret: Data($0.text.utf8)) }
        let entryKeys = Set(entries.map { Array($0.key.utf8) })
        for file in export.files {
            let key = "\(file.entry)/\(file.name)"
            guard !entryKeys.contains(Array(key.utf8)) else {
                throw CommandFailure.badData(
                    "\(source): the file \(quotedValue(file.name, expected: "a file name")) of "
                        + "\(quotedValue(file.entry, expected: "an entry name")) would be stored under the key of "
                        + "another entry; nothing was stored. Rename one of them and export again")
            }
            entries.append((key, Data(file.bytes)))
        }
        let (items, renamed) = try ImportFile.items(ofEntries: entries, service: service) {
            // By its number too: a name that is not shown (control characters) still says which.
            "\(source): entry \($0 + 1), \(quotedValue(entries[$0].key, expected: "an entry name"))"
        }
        self.init(items: items, renamed: renamed, notImported: export.notImported)
    }
}
