import FoundationEssentials
import Glibc
import KeychainCore

/// The most this tool reads of a small input it parses (an identity or recipients file, an env
/// file, a credential helper's request, a typed line): 1 MiB, as much as a secret.
let smallInputLimit = maximumSecretSize

/// Writes to stderr, unbuffered.
func writeError(_ text: String) {
    var text = text
    text.withUTF8 { _ = writeAll(STDERR_FILENO, $0) }
}

/// A note on stderr that does not stop the command: `keychain-cli: MESSAGE`.
func warn(_ message: String) {
    writeError("keychain-cli: \(message)\n")
}

/// Writes bytes to stdout. A reader that went away (`keychain-cli list | head -1`) ends the
/// process quietly by SIGPIPE, as it ends other filters, on every backend.
/// - Throws: ``CommandFailure`` (I/O) when stdout is closed or full.
func writeOutput(_ bytes: some Collection<UInt8>) throws {
    let ok = Array(bytes).withUnsafeBufferPointer { writeAll(STDOUT_FILENO, $0) }
    if !ok { throw standardOutputFailure(errno) }
}

/// The failure of a write to standard output with `code`; for a reader that went away (EPIPE),
/// ends the process by SIGPIPE instead, as other filters do.
func standardOutputFailure(_ code: Int32) -> CommandFailure {
    if code == EPIPE {
        signal(SIGPIPE, SIG_DFL)
        raise(SIGPIPE)
    }
    return CommandFailure.io(
        "could not write to standard output (\(String(cString: strerror(code)))). Check where it is redirected")
}

func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

/// Reads `fd` to its end, refusing more than `limit` bytes (nothing is ever silently truncated).
/// - Returns: nil when the input is larger than `limit`.
func readAll(_ fd: Int32, limit: Int, name: String = "standard input") throws -> [UInt8]? {
    do {
        return try readToEnd(fd, limit: limit, operation: "could not read \(name)")
    } catch {
        throw CommandFailure.io(error.description + ". Check the path and its permissions")
    }
}

/// Reads the file at `path`, or standard input when `path` is nil, refusing more than `limit`
/// bytes: what --from-file, --env-file, inject -i and import FILE share.
/// - Returns: nil when the input is larger than `limit`.
/// - Throws: ``CommandFailure`` (I/O) when the file cannot be opened or read.
func readInput(path: String?, limit: Int) throws -> [UInt8]? {
    guard let path else { return try readAll(STDIN_FILENO, limit: limit) }
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
        throw CommandFailure.io(
            "cannot open \(quotedPath(path)) (\(String(cString: strerror(errno)))). Check the path and its permissions")
    }
    defer { close(fd) }
    return try readAll(fd, limit: limit, name: "\(quotedPath(path))")
}

/// `bytes` without one trailing "\n" or "\r\n" (what `echo` and here-strings add).
func withoutTrailingNewline(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
    var end = bytes.endIndex
    if end > 0 && bytes[end - 1] == UInt8(ascii: "\n") {
        end -= 1
        if end > 0 && bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
    }
    return bytes[..<end]
}
