import FoundationEssentials
import Glibc
import KeychainCore

/// 1Password's `.1pux` export: a zip read by unzip, its `export.data` the items and its
/// `files/` the documents, each stored beside its entry.
extension ImportFormat {
    /// The items of the `.1pux` zip `file`.
    static func items(of1PUX file: String, service: ServiceName, timeout: Double) throws -> ImportedItems {
        let (data, source) = try exportData(of1PUX: file, timeout: timeout)
        let (entries, documents) = try OnePasswordExport.export(ofData: data, source: source)
        // Each file (a Document's, a file field's) is a secret of its own beside its entry.
        var export = ManagerExport(entries: entries)
        if !documents.isEmpty { try checkMembers(documents.map(\.member), of1PUX: file, timeout: timeout) }
        for document in documents {
            if let bytes = try member(document.member, of1PUX: file, timeout: timeout) {
                export.files.append(ManagerFile(entry: document.entry, name: document.name, bytes: bytes))
            } else {
                export.notImported.append(
                    "the entry \(quotedValue(document.entry, expected: "an entry name")) has the file "
                        + "\(quotedValue(document.name, expected: "a file name")), which is not imported: it is larger "
                        + "than 1 MiB, the largest secret")
            }
        }
        return try ImportedItems(export, service: service, source: source)
    }

    /// unzip with `options` on the `.1pux` zip `file` (for `member`, when given): its output in
    /// memory, at most `limit` bytes, within `timeout` (at least 60 s); nil when it took longer.
    /// Away from the terminal: a zip with a password would have unzip ask for it there.
    static func unzip(_ options: [String], _ file: String, _ member: String? = nil, timeout: Double, limit: Int)
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
    static func member(_ name: String, of1PUX file: String, timeout: Double) throws -> [UInt8]? {
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
}
