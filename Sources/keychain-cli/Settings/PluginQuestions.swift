import Glibc
import KeychainCore

extension Settings {
    /// Gives the vault's age plugins (age1NAME1… recipients, AGE-PLUGIN-NAME-1… identities)
    /// --timeout, the terminal for their questions, and the environment without our secrets.
    func configureAgePlugins(timeout: Double) {
        let environment = Environment.all(except: Set(Self.secretVariables + ["CREDENTIALS_DIRECTORY"]))
        AgePlugin.settings.withLock {
            $0 = AgePlugin.Settings(timeout: timeout, questions: TerminalPluginQuestions(), environment: environment)
        }
    }
}

/// A plugin's messages on standard error, its questions on the terminal (/dev/tty; a secret
/// not echoed). Without a terminal, its questions are answered `fail`. Every text is already
/// escaped by the library.
struct TerminalPluginQuestions: AgePluginQuestions {
    func show(_ message: String, plugin: String) -> Bool {
        writeError("\(AgePlugin.program(plugin)): \(message)\n")
        return true
    }

    func secret(_ prompt: String, plugin: String) -> [UInt8]? {
        withTerminal { tty in
            try? readHiddenLine(prompt: "\(AgePlugin.program(plugin)): \(prompt) ", input: tty, output: tty)
        }
    }

    func value(_ prompt: String, plugin: String) -> [UInt8]? {
        withTerminal { tty in
            write(tty, "\(AgePlugin.program(plugin)): \(prompt) ")
            return readTerminalLine(tty)
        }
    }

    func confirm(_ message: String, yes: String, no: String?, plugin: String) -> Bool? {
        withTerminal { tty in
            let choices = no.map { "[y] \(yes) / [n] \($0)" } ?? "[y] \(yes)"
            write(tty, "\(AgePlugin.program(plugin)): \(message) \(choices) ")
            guard let line = readTerminalLine(tty) else { return nil }
            let answer = String(decoding: line, as: UTF8.self).lowercased()
            if answer == "y" || answer == "yes" { return true }
            return no == nil ? nil : answer == "n" || answer == "no" ? false : nil
        }
    }

    private func withTerminal<Result>(_ body: (Int32) -> Result?) -> Result? {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { return nil }
        defer { close(tty) }
        return body(tty)
    }

    private func write(_ tty: Int32, _ text: String) {
        Array(text.utf8).withUnsafeBufferPointer { _ = writeAll(tty, $0) }
    }

    /// A line typed on `tty` (echoed), without its newline; nil at its end.
    private func readTerminalLine(_ tty: Int32) -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count <= smallInputLimit {
            let count = read(tty, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { return line.last == UInt8(ascii: "\r") ? line.dropLast() : line }
            line.append(byte)
        }
        return nil
    }
}
