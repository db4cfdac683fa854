import KeychainSystem

/// Phase 2 of either state machine, which the plugin leads: the commands both share (`msg`,
/// `confirm`, `request-public`, `request-secret`, `error`), and `unsupported` for any other one
/// the state machine's own handler does not take.
struct AgePluginSession {
    let connection: AgePluginConnection
    let settings: AgePlugin.Settings
    /// A question it asked that had no one to answer it (no terminal): said when it then fails.
    private(set) var askedWithoutTerminal = false
    /// The first `error` it sent, escaped.
    private(set) var firstError: String?

    init(_ connection: AgePluginConnection, settings: AgePlugin.Settings) {
        (self.connection, self.settings) = (connection, settings)
    }

    /// Reads the plugin's commands until `done`, answering the shared ones here and giving the
    /// others to `handle`, which answers them and returns false for a command it does not know.
    mutating func run(_ handle: (AgeFile.Stanza) throws(AgePlugin.Failure) -> Bool) throws(AgePlugin.Failure) {
        while true {
            var command = try connection.receive()
            defer { wipe(&command.body) }
            let arguments = command.arguments
            switch command.type {
            case "done":
                return
            case "msg":
                let shown = settings.questions.show(AgePlugin.shown(command.body), plugin: connection.plugin)
                try connection.send([shown ? "ok" : "fail"])
            case "request-secret", "request-public":
                let prompt = AgePlugin.shown(command.body)
                var answer =
                    command.type == "request-secret"
                    ? settings.questions.secret(prompt, plugin: connection.plugin)
                    : settings.questions.value(prompt, plugin: connection.plugin)
                defer { if answer != nil { wipe(&answer!) } }
                if let answer {
                    try connection.send(["ok"], body: answer)
                } else {
                    askedWithoutTerminal = true
                    try connection.send(["fail"])
                }
            case "confirm":
                guard arguments.count == 2 || arguments.count == 3,
                    let yes = AgeFile.decodeBase64(arguments[1]),
                    let no = arguments.count == 3 ? AgeFile.decodeBase64(arguments[2]) : []
                else { throw connection.fail("it sent a malformed confirm command") }
                let answer = settings.questions.confirm(
                    AgePlugin.shown(command.body), yes: AgePlugin.shown(yes, limit: 40),
                    no: arguments.count == 3 ? AgePlugin.shown(no, limit: 40) : nil, plugin: connection.plugin)
                if let answer {
                    try connection.send(["ok", answer ? "yes" : "no"])
                } else {
                    askedWithoutTerminal = true
                    try connection.send(["fail"])
                }
            case "error":
                if firstError == nil { firstError = AgePlugin.shown(command.body) }
                try connection.send(["ok"])
            default:
                if try !handle(command) { try connection.send(["unsupported"]) }
            }
        }
    }

    /// The failure to report when the session gave nothing: a question with no terminal, the
    /// plugin's own error, or nil.
    var failure: AgePlugin.Failure? {
        if askedWithoutTerminal { return .needsTerminal(plugin: connection.plugin) }
        return firstError.map { .failed(plugin: connection.plugin, reason: $0.isEmpty ? "an error (no message)" : $0) }
    }
}
