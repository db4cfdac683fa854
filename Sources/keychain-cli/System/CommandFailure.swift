/// A failure of the command-line layer itself (reading input, talking to the terminal).
struct CommandFailure: Error {
    enum Kind {
        case usage, badData, io
        /// A secret a template or file refers to is missing (1, as for get).
        case notFound
        /// `exec`: the command does not exist (127) or cannot be run (126), as shells report it.
        case commandNotFound, cannotExecute
        /// What the command needs cannot be had without asking, and it may not ask (77).
        case denied
        /// What the command needs is not there: a display and a clipboard program for --clip (69).
        case unavailable
        /// A program the command waits on did not answer in time (75).
        case timedOut
        /// The command would replace something it may only create: `generate` without --force (73).
        case exists
        /// `edit`: the editor ended without success; nothing was stored (1).
        case editorFailed
        /// `edit`: another writer changed the secret while the editor was open; nothing was
        /// stored (75: try again).
        case changedMeanwhile
    }

    var kind: Kind
    var message: String

    static func usage(_ message: String) -> Self { Self(kind: .usage, message: message) }
    static func badData(_ message: String) -> Self { Self(kind: .badData, message: message) }
    static func io(_ message: String) -> Self { Self(kind: .io, message: message) }
    static func notFound(_ message: String) -> Self { Self(kind: .notFound, message: message) }
    static func unavailable(_ message: String) -> Self { Self(kind: .unavailable, message: message) }
}
