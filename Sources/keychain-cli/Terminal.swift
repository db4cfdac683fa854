import KeychainCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

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
    if !ok {
        if errno == EPIPE {
            signal(SIGPIPE, SIG_DFL)
            raise(SIGPIPE)
        }
        throw CommandFailure.io(
            "could not write to standard output (\(String(cString: strerror(errno)))). Check where it is redirected")
    }
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

// The terminal and its settings to restore if the user interrupts a hidden prompt.
nonisolated(unsafe) private var savedTerminal = termios()
nonisolated(unsafe) private var promptTerminal = STDIN_FILENO

/// Asks for a line on the terminal `input` without echoing it; the prompt goes to `output`.
/// - Returns: the line without its newline; nil at end of input.
func readHiddenLine(prompt: String, input: Int32 = STDIN_FILENO, output: Int32 = STDERR_FILENO) throws -> [UInt8]? {
    guard tcgetattr(input, &savedTerminal) == 0 else {
        throw CommandFailure.io("could not read the terminal settings (\(String(cString: strerror(errno))))")
    }
    promptTerminal = input
    var hidden = savedTerminal
    hidden.c_lflag &= ~tcflag_t(ECHO)
    hidden.c_lflag |= tcflag_t(ECHONL)
    let restore: @convention(c) (Int32) -> Void = { signal in
        tcsetattr(promptTerminal, TCSANOW, &savedTerminal)
        writeError("\n")
        _exit(128 + signal)
    }
    let previousInterrupt = signal(SIGINT, restore)
    let previousTerminate = signal(SIGTERM, restore)
    // Echo goes off before the prompt appears, so an answer typed at once is neither echoed
    // nor lost (TCSANOW keeps input already typed; TCSAFLUSH would discard it).
    tcsetattr(input, TCSANOW, &hidden)
    var text = prompt
    text.withUTF8 { _ = writeAll(output, $0) }
    defer {
        tcsetattr(input, TCSANOW, &savedTerminal)
        signal(SIGINT, previousInterrupt)
        signal(SIGTERM, previousTerminate)
    }
    return try readLine(input)
}

/// Asks a yes/no question on the terminal; only "y" or "yes" is a yes.
func confirm(_ question: String) throws -> Bool {
    writeError(question + " [y/N] ")
    guard let answer = try readLine(STDIN_FILENO) else { return false }
    let text = String(decoding: answer, as: UTF8.self).lowercased()
    return text == "y" || text == "yes"
}

private func readLine(_ fd: Int32) throws -> [UInt8]? {
    var line: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let count = read(fd, &byte, 1)
        if count < 0 {
            if errno == EINTR { continue }
            throw CommandFailure.io("could not read from the terminal (\(String(cString: strerror(errno))))")
        }
        if count == 0 { return line.isEmpty ? nil : line }
        if byte == UInt8(ascii: "\n") { break }
        line.append(byte)
        if line.count > 1 << 20 { throw CommandFailure.badData("the typed line is too long") }
    }
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    return line
}
