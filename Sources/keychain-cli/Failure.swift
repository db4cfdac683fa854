import ArgumentParser
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

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
    }

    var kind: Kind
    var message: String

    static func usage(_ message: String) -> Self { Self(kind: .usage, message: message) }
    static func badData(_ message: String) -> Self { Self(kind: .badData, message: message) }
    static func io(_ message: String) -> Self { Self(kind: .io, message: message) }
    static func notFound(_ message: String) -> Self { Self(kind: .notFound, message: message) }
}

/// The one place where errors become exit codes (the table in the README and `--help`).
func exitStatus(for error: any Error) -> Int32 {
    switch error {
    case let code as ExitCode:
        return code.rawValue
    case let error as KeychainError:
        switch error {
        case .notFound: return 1
        case .invalidName, .badConfiguration: return 64
        case .emptySecret, .secretTooLarge, .invalidData, .vaultCorrupt: return 65
        case .noSessionBus, .noSecretService, .noDefaultCollection, .backendFailure, .serverUnavailable: return 69
        case .vaultIO, .insecureFile: return 74
        case .timedOut, .vaultBusy, .serverTimedOut: return 75
        case .locked, .permissionDenied, .wrongPassphrase, .noPassphrase, .noMatchingIdentity, .vaultRekeyed,
            .serverDenied:
            return 77
        }
    case is FileError:
        return 74
    case let error as FormatError:
        return error.isUsageError ? 64 : 65
    case let failure as CommandFailure:
        switch failure.kind {
        case .usage: return 64
        case .badData: return 65
        case .io: return 74
        case .notFound: return 1
        case .commandNotFound: return 127
        case .cannotExecute: return 126
        case .denied: return 77
        }
    default:
        // The parser's own errors (64), help and version (0); anything else it calls a plain
        // failure (1, which means "not found" here) is a bug.
        let code = KeychainCLI.exitCode(for: error).rawValue
        return code == 1 ? 70 : code
    }
}

/// Prints `error` as `keychain-cli: <what happened>. <what to do next>` (help and version go to
/// stdout as usual) and returns the exit code.
func reportingFailure(_ error: any Error) -> Int32 {
    let code = exitStatus(for: error)
    if error is ExitCode { return code }  // the command has said what went wrong (doctor)
    if code == 0, !(error is KeychainError || error is CommandFailure || error is FileError || error is FormatError) {
        KeychainCLI.exit(withError: error)  // --help, --version: printed by the parser
    }
    let message = failureMessage(error)
    writeError("keychain-cli: \(message)\n")
    return code
}

/// What happened and what to do next, for one error (without the `keychain-cli:` prefix).
func failureMessage(_ error: any Error) -> String {
    switch error {
    case let error as KeychainError: return error.description
    case let failure as CommandFailure: return failure.message
    case let error as FileError: return "\(error). Check the path and its permissions"
    case let error as FormatError: return error.description
    default:
        return exitStatus(for: error) == 70
            ? "internal error (\(error)). This is a bug: please report it with the command you ran"
            : UsageCheck.message(for: error, arguments: Array(CommandLine.arguments.dropFirst()))
    }
}
