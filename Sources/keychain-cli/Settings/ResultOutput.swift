import Glibc
import KeychainCore

// Where export and inject put what they write: `-o PATH` or standard output.

extension Settings {
    /// The files the vault backend reads, which `-o` must never replace with plaintext: the vault
    /// itself, the identity file and the passphrase file (none on the other backends).
    func filesTheBackendReads() throws -> [String] {
        guard try resolvedBackend() == .vault else { return [] }
        return [try vaultPath(), try identitySource(self)?.path, passphraseFile].compactMap { $0 }
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
        if let read = try filesTheBackendReads().first(where: { isSameFile(output, $0) }) {
            throw CommandFailure.usage(
                "-o \(quotedPath(output)) is \(read == output ? "" : "or leads to ")\(quotedPath(read)), "
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
/// would replace by a plaintext file), or the same file at the end (followed: a hard link, a
/// link to it, another spelling).
private func isSameFile(_ output: String, _ path: String) -> Bool {
    func same(_ look: (String, UnsafeMutablePointer<stat>) -> Int32) -> Bool {
        var outputInfo = stat()
        var pathInfo = stat()
        guard look(output, &outputInfo) == 0, look(path, &pathInfo) == 0 else { return false }
        return outputInfo.st_dev == pathInfo.st_dev && outputInfo.st_ino == pathInfo.st_ino
    }
    return same { lstat($0, $1) } || same { stat($0, $1) }
}
