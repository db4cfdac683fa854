import Glibc
import KeychainCore

// Where export and inject put what they write: `-o PATH` or standard output.

extension Settings {
    /// The files the vault backend reads, which `-o` must never replace with plaintext, with
    /// their names for a message: the vault itself, the identity file and the passphrase file,
    /// or the files behind --identity-fd and --passphrase-fd (none on the other backends).
    func filesTheBackendReads() throws -> [(path: String, name: String)] {
        guard try resolvedBackend() == .vault else { return [] }
        let vault = try vaultPath()
        var files = [(vault, quotedPath(vault))]
        if let identity = try identitySource(self) {
            files.append((identity.descriptor.map { "/proc/self/fd/\($0)" } ?? identity.path!, identity.name))
        }
        if let passphraseFile { files.append((passphraseFile, quotedPath(passphraseFile))) }
        if let passphraseFD { files.append(("/proc/self/fd/\(passphraseFD)", "--passphrase-fd \(passphraseFD)")) }
        return files
    }

    /// Writes what `body` gives its sink to `output` (``writeOutputFile(_:_:)``: a file is
    /// replaced atomically, a FIFO or terminal written into), or to standard output when it is nil.
    /// - Throws: ``CommandFailure`` as ``checkOutput(_:)`` says, or (I/O) when it cannot be written.
    func writeResult(to output: String?, _ body: (ByteSink) throws(FileError) -> Void) throws {
        guard let output else {
            do {
                return try body(ByteSink(fd: STDOUT_FILENO, path: "standard output"))
            } catch {
                throw standardOutputFailure(error.code)
            }
        }
        try checkOutput(output)
        do {
            try writeOutputFile(output, body)
        } catch  where error.code == EPIPE {
            // The reader of a FIFO or of -o /dev/stdout went away: SIGPIPE, as for stdout.
            throw standardOutputFailure(EPIPE)
        }
    }

    /// Refuses an `-o` path that is a file the backend reads, a directory, a disk or a socket:
    /// checked before anything is read, and again before the write.
    func checkOutput(_ output: String?) throws {
        guard let output else { return }
        if let read = try filesTheBackendReads().first(where: { isSameFile(output, $0.path) }) {
            throw CommandFailure.usage(
                "-o \(quotedPath(output)) is \(read.path == output ? "" : "or leads to ")\(read.name), "
                    + "which the vault backend reads; writing the secrets there in plaintext would replace it. "
                    + "Nothing was written; give -o another path")
        }
        if case .refused(let kind) = OutputTarget(output) {
            throw CommandFailure.io(
                "\(quotedPath(output)) is \(kind); nothing was written. Give -o the path of a file "
                    + "(or of a FIFO or terminal to write into)")
        }
    }
}

/// Whether `output` is `path` or leads to the same file: the same name or link (both not
/// followed: `-o "$KEYCHAIN_VAULT"` where that is a link into a dotfiles repository, which -o
/// would replace by a plaintext file), the same file at the end (followed: a hard link, a link
/// to it, another spelling, a descriptor's file), or, for a file not made yet (a vault before
/// its first set), the same name in the same directory.
private func isSameFile(_ output: String, _ path: String) -> Bool {
    func same(_ first: String, _ second: String, _ look: (String, UnsafeMutablePointer<stat>) -> Int32) -> Bool {
        var firstInfo = stat()
        var secondInfo = stat()
        guard look(first, &firstInfo) == 0, look(second, &secondInfo) == 0 else { return false }
        return firstInfo.st_dev == secondInfo.st_dev && firstInfo.st_ino == secondInfo.st_ino
    }
    if same(output, path, { lstat($0, $1) }) || same(output, path, { stat($0, $1) }) { return true }
    let (outputDirectory, outputName) = splitPath(output)
    let (directory, name) = splitPath(path)
    return outputName == name && same(outputDirectory, directory, { stat($0, $1) })
}
