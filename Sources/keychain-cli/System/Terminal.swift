import FoundationEssentials
import Glibc
import KeychainCore

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
        if line.count > smallInputLimit { throw CommandFailure.badData("the typed line is too long") }
    }
    if line.last == UInt8(ascii: "\r") { line.removeLast() }
    return line
}
