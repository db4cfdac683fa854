import FoundationEssentials
import Glibc
import KeychainCore

/// A program that puts text on the desktop's clipboard and reads it back: wl-clipboard under
/// Wayland, else xclip or xsel under X11 (through XWayland, too). Each one's copy runs in the
/// foreground and owns the clipboard until it ends or another program takes the clipboard.
enum ClipboardTool: String, CaseIterable {
    case wlClipboard = "wl-copy"
    case xclip, xsel

    var copyCommand: [String] {
        switch self {
        case .wlClipboard: return ["wl-copy", "--foreground", "--type", "text/plain;charset=utf-8"]
        case .xclip: return ["xclip", "-quiet", "-selection", "clipboard", "-in"]
        case .xsel: return ["xsel", "--clipboard", "--input", "--nodetach"]
        }
    }

    var pasteCommand: [String] {
        switch self {
        case .wlClipboard: return ["wl-paste", "--no-newline"]
        case .xclip: return ["xclip", "-selection", "clipboard", "-out"]
        case .xsel: return ["xsel", "--clipboard", "--output"]
        }
    }

    /// Empties the clipboard (xclip can only replace it: with nothing).
    var clearCommand: [String] {
        switch self {
        case .wlClipboard: return ["wl-copy", "--clear"]
        case .xclip: return ["xclip", "-selection", "clipboard", "-in"]
        case .xsel: return ["xsel", "--clipboard", "--clear"]
        }
    }

    /// The tool for this session: wl-clipboard when WAYLAND_DISPLAY is set, else xclip or xsel
    /// when DISPLAY is.
    /// - Throws: ``CommandFailure`` (69) naming the package to install, or saying there is no display.
    static func find() throws -> ClipboardTool {
        let wayland = Environment.isSet("WAYLAND_DISPLAY")
        let x11 = Environment.isSet("DISPLAY")
        let installed = { (name: String) in executable(named: name) != nil }
        if wayland && installed("wl-copy") && installed("wl-paste") { return .wlClipboard }
        if x11, let tool = [ClipboardTool.xclip, .xsel].first(where: { installed($0.rawValue) }) { return tool }
        guard wayland || x11 else {
            throw CommandFailure.unavailable(
                "--clip needs a graphical session, and neither WAYLAND_DISPLAY nor DISPLAY is set. "
                    + "Run it in the desktop's terminal, or drop --clip")
        }
        throw CommandFailure.unavailable(
            wayland
                ? "--clip under Wayland needs wl-copy and wl-paste. Install them: sudo apt install wl-clipboard"
                : "--clip under X11 needs xclip or xsel. Install one: sudo apt install xclip")
    }

}

/// `--clip`: puts `secret` on the clipboard and returns once it is there. A clearer process,
/// keychain-cli itself in a session of its own (so that closing the terminal does not end it),
/// gets the secret on a pipe, hands it to the tool, keeps only its SHA-256, and after
/// `clearAfter` seconds empties the clipboard if it still holds the secret.
/// - Throws: ``CommandFailure``: 65 for a secret that is not text, 69 when there is no
///   clipboard (or its tool failed), 75 when it did not take the secret in time.
func copyToClipboard(_ secret: Data, clearAfter: Int, naming key: KeychainKey) throws {
    guard String(validating: secret, as: UTF8.self) != nil, !secret.contains(0) else {
        throw CommandFailure.badData(
            "the secret '\(key)' is binary and cannot go on the clipboard as text. Write it to a file "
                + "instead: keychain-cli get --raw \(shellQuoted(escapedForDisplay(key.rawValue))) > FILE")
    }
    let tool = try ClipboardTool.find()
    guard let input = makePipe(), let status = makePipe() else {
        throw CommandFailure.io("cannot create a pipe (\(String(cString: strerror(errno)))). Try again")
    }
    let keeper = spawnProcess(
        ["keychain-cli", ClipboardKeeper.argument, tool.rawValue, String(clearAfter)], path: "/proc/self/exe",
        descriptors: [input.read, status.write, nil], newSession: true, variables: clipboardVariables(),
        blocked: [SIGUSR1])  // until its handler is in place: a later clearer may signal it at once
    close(input.read)
    close(status.write)
    defer { close(status.read) }
    guard keeper != nil else {
        close(input.write)
        throw CommandFailure.io("cannot start the clipboard's clearer (\(String(cString: strerror(errno))))")
    }
    var bytes = Array(secret)
    _ = bytes.withUnsafeBufferPointer { writeAll(input.write, $0) }
    wipe(&bytes)
    close(input.write)
    // One line: "ok", or the tool's failure. The clearer gives up on the tool after 5 seconds,
    // and on a clipboard that does not answer after 2 more; this waits no longer than that.
    var poller = pollfd(fd: status.read, events: Int16(POLLIN), revents: 0)
    var answer: [UInt8] = []
    let deadline = monotonicSeconds() + ClipboardKeeper.startSeconds + 3 * ClipboardKeeper.pasteSeconds
    while case let left = deadline - monotonicSeconds(), left > 0, poll(&poller, 1, Int32(left * 1000) + 1) > 0 {
        var chunk = [UInt8](repeating: 0, count: 512)
        let count = read(status.read, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        guard count > 0, answer.count < 4096 else { break }
        answer += chunk[0..<count]
    }
    if !answer.contains(UInt8(ascii: "\n")), let keeper {
        kill(keeper, SIGTERM)  // still at work: it ends its tool, which empties the clipboard
        answer = Array("timeout\n".utf8)
    }
    let line = String(decoding: answer, as: UTF8.self)
    guard line == "ok\n" else {
        if line.hasPrefix("timeout") {
            throw CommandFailure(
                kind: .timedOut,
                message: "\(tool.rawValue) did not take the secret within 5 seconds (a display that does not answer?). "
                    + "Try again")
        }
        let reason = line.isEmpty ? "it ended without a word" : String(line.dropLast())
        throw CommandFailure.unavailable(
            "could not put the secret on the clipboard with \(tool.rawValue): \(reason). Check the display "
                + "(\(Environment.isSet("WAYLAND_DISPLAY") ? "WAYLAND_DISPLAY" : "DISPLAY")), or drop --clip")
    }
    writeError(
        "Copied '\(escapedForDisplay(key.rawValue))' to the clipboard; it is cleared in \(clearAfter) s "
            + "unless something else is copied first.\n")
}

/// What the clearer and its tool need of the environment, and nothing more: a passphrase or
/// token in $KEYCHAIN_PASSPHRASE or $BAO_TOKEN must not live on in them for the whole time.
private func clipboardVariables() -> [String] {
    let names = [
        "PATH", "HOME", "DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "LANG",
        "LC_ALL", "LC_CTYPE",
    ]
    return names.compactMap { name in Environment.value(name).map { "\(name)=\($0)" } }
}
