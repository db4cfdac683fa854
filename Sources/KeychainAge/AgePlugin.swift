import Glibc
import KeychainSystem

/// age plugins (https://c2sp.org/age-plugin): recipients `age1NAME1…` and identities
/// `AGE-PLUGIN-NAME-1…` whose keys are used by the program `age-plugin-NAME`, found in PATH and
/// run for each file written (`recipient-v1`) or opened (`identity-v1`), spoken to over its
/// standard input and output. Its standard error is ours.
package enum AgePlugin {
    /// What a plugin session may use, set by the program once it knows (the command line's
    /// `--timeout` and terminal): a library caller that sets nothing gets 5 s, no questions
    /// answered, and the plugin's messages on standard error.
    package struct Settings: Sendable {
        /// How long a plugin may stay silent when it is its turn, in seconds; then it is ended.
        package var timeout: Double
        /// Who answers its questions and shows its messages.
        package var questions: any AgePluginQuestions
        /// The plugin's environment (NAME=value); nil: this process's.
        package var environment: [String]?
        /// Where plugins are looked for (directories split by `:`); nil: $PATH.
        package var searchPath: String?

        package init(
            timeout: Double = 5, questions: any AgePluginQuestions = NoQuestions(), environment: [String]? = nil,
            searchPath: String? = nil
        ) {
            (self.timeout, self.questions, self.environment) = (timeout, questions, environment)
            self.searchPath = searchPath
        }
    }

    package static let settings = Locked(Settings())

    /// Why a plugin did not do what it was asked. Its words (`reason`) are escaped and cut short.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// No `age-plugin-NAME` in PATH.
        case notInPath(plugin: String)
        /// It sent an error, ended early, or broke the protocol; `reason` says which.
        case failed(plugin: String, reason: String)
        /// It did not answer within `seconds`, and was ended.
        case timedOut(plugin: String, seconds: Double)
        /// It asked a question (a PIN, a confirmation), and there is no terminal to ask it on.
        case needsTerminal(plugin: String)

        package var plugin: String {
            switch self {
            case .notInPath(let plugin), .failed(let plugin, _), .timedOut(let plugin, _), .needsTerminal(let plugin):
                return plugin
            }
        }

        package var description: String {
            switch self {
            case .notInPath(let plugin):
                return "\(program(plugin)) is not in PATH; install the plugin for \(plugin)"
            case .failed(let plugin, let reason):
                return "the age plugin \(program(plugin)) failed: \(reason)"
            case .timedOut(let plugin, let seconds):
                let shown = seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
                return "the age plugin \(program(plugin)) did not answer within \(shown) s, and was ended"
            case .needsTerminal(let plugin):
                return "the age plugin \(program(plugin)) asks a question (a PIN or a confirmation), which needs "
                    + "a terminal, and there is none"
            }
        }
    }

    /// The program of plugin `name`.
    package static func program(_ name: String) -> String { "age-plugin-\(name)" }

    /// Whether `name` is a plugin name: letters (lower case here), digits, `-`, `_`, `.`, `+`.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "-_.+".utf8.contains(byte)
            }
    }

    /// The path of `age-plugin-NAME` in PATH's absolute directories (the spec: never one
    /// relative to the working directory); nil when there is none.
    static func executable(_ name: String, searchPath: String?) -> String? {
        let path = searchPath ?? Environment.value("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where directory.hasPrefix("/") {
            let candidate = "\(directory)/\(program(name))"
            var status = stat()
            if stat(candidate, &status) == 0, status.st_mode & S_IFMT == S_IFREG, access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }

    /// A plugin's text (a message, a prompt, an error) made safe to show: valid UTF-8, control
    /// characters escaped, one line of at most `limit` characters.
    static func shown(_ bytes: [UInt8], limit: Int = 300) -> String {
        let text = escapedForDisplay(String(decoding: bytes, as: UTF8.self))
        return text.count > limit ? String(text.prefix(limit)) + "…" : text
    }
}

/// Who a plugin's questions and messages go to: the command line asks on the terminal. Every
/// text given is already escaped (no control character) and cut short.
package protocol AgePluginQuestions: Sendable {
    /// Shows `message` from plugin `plugin` (its name); false when it cannot be shown.
    func show(_ message: String, plugin: String) -> Bool
    /// A secret (a PIN) typed for `prompt`, not echoed; nil when there is no one to ask.
    func secret(_ prompt: String, plugin: String) -> [UInt8]?
    /// A public value typed for `prompt`; nil when there is no one to ask.
    func value(_ prompt: String, plugin: String) -> [UInt8]?
    /// Whether `message` is answered `yes` (true) or `no` (false); nil when there is no one to ask.
    func confirm(_ message: String, yes: String, no: String?, plugin: String) -> Bool?
}

/// No one to ask: messages go to standard error, questions are answered `fail`.
package struct NoQuestions: AgePluginQuestions {
    package init() {}

    package func show(_ message: String, plugin: String) -> Bool {
        Array("\(AgePlugin.program(plugin)): \(message)\n".utf8).withUnsafeBufferPointer { writeAll(STDERR_FILENO, $0) }
    }
    package func secret(_ prompt: String, plugin: String) -> [UInt8]? { nil }
    package func value(_ prompt: String, plugin: String) -> [UInt8]? { nil }
    package func confirm(_ message: String, yes: String, no: String?, plugin: String) -> Bool? { nil }
}
