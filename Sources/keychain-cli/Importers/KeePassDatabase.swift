import FoundationEssentials
import Glibc
import KeychainCore

/// A KeePass database (`.kdbx`) as `import --format keepassxc` reads it: decrypted by
/// `keepassxc-cli export --format xml`, the tool KeePassXC's users already trust with it, its
/// password written to the tool's standard input (never on a command line), its XML kept in memory
/// and read by ``KeePassXML``.
struct KeePassDatabase {
    let path: String
    /// `--source-key-file`: a key file that opens the database with (or, with an empty
    /// password, instead of) the password.
    let keyFile: String?
    let password: PassphraseInput
    let timeout: Double

    /// The largest XML export read (10,000 entries export to about 12 MiB).
    static let limit = 256 << 20

    /// The database's XML, as keepassxc-cli exports it (the caller wipes it).
    /// - Throws: ``CommandFailure``: 74 when a file cannot be read, 77 for a wrong password or key
    ///   file, 65 for a file keepassxc-cli cannot read as a database, 69 without keepassxc-cli, 75
    ///   when it does not finish within the time limit; ``FormatError`` for XML that is not KeePass's.
    func export() throws -> [UInt8] {
        for file in [path] + (keyFile.map { [$0] } ?? []) where access(file, R_OK) != 0 {
            throw CommandFailure.io(
                "cannot read \(quotedPath(file)) (\(String(cString: strerror(errno)))); nothing was stored")
        }
        var secret = try readPassword()
        defer { wipe(&secret) }
        guard !secret.contains(UInt8(ascii: "\n")) else {
            throw CommandFailure.badData(
                "the password given for \(quotedPath(path)) holds a line break, and keepassxc-cli reads one line; "
                    + "nothing was stored. Give the password alone (one trailing newline is ignored)")
        }
        var arguments = ["keepassxc-cli", "export", "--format", "xml"]
        if let keyFile { arguments += ["--key-file", ToolRun.pathArgument(keyFile)] }
        if secret.isEmpty && keyFile != nil { arguments.append("--no-password") }
        arguments.append(ToolRun.pathArgument(path))
        var input = secret + [UInt8(ascii: "\n")]
        defer { wipe(&input) }
        // Away from the terminal: it reads the password from its standard input, and asks nothing.
        guard
            var run = try ToolRun.run(
                arguments, input: input, timeout: max(timeout, 60), limit: Self.limit, awayFromTerminal: true,
                installHint: "KeePass databases are read with keepassxc-cli (apt-get install keepassxc)")
        else {
            throw CommandFailure(
                kind: .timedOut,
                message:
                    "keepassxc-cli did not export \(quotedPath(path)) in \(Int(max(timeout, 60))) s; nothing was stored"
            )
        }
        var handed = false
        defer { if !handed { wipe(&run.output) } }
        guard !run.tooLarge else {
            throw CommandFailure.badData(
                "the export of \(quotedPath(path)) is larger than 256 MiB; nothing was stored")
        }
        guard run.succeeded else {
            if run.errors.contains("Invalid credentials") {
                throw CommandFailure(
                    kind: .denied,
                    message: "keepassxc-cli could not open \(quotedPath(path)): wrong password or key file; nothing "
                        + "was stored. Give the database's password with --source-passphrase-file or "
                        + "--source-passphrase-fd (and its key file with --source-key-file)")
            }
            throw CommandFailure.badData(
                "keepassxc-cli could not read \(quotedPath(path)) as a KeePass database: \(run.reason); nothing was stored"
            )
        }
        handed = true
        return run.output
    }

    /// The password: from --source-passphrase-fd or --source-passphrase-file, else asked at the
    /// terminal (empty there only with a key file).
    private func readPassword() throws -> [UInt8] {
        try password.readOther(
            "password for \(quotedPath(path))", asking: "Password of the KeePass database \(path): ",
            options: "--source-passphrase-file PATH or --source-passphrase-fd N")
    }
}
