import ArgumentParser
import Glibc
import KeychainCore

/// The one place where errors become exit codes (docs/exit-codes.md, `--help`, the man page).
/// `parserStatus` gives the argument parser's code for its own errors (Main asks the parser).
func exitStatus(for error: any Error, parserStatus: (any Error) -> Int32 = { _ in 1 }) -> Int32 {
    switch error {
    case let code as ExitCode:
        return code.rawValue
    case let located as LocatedError:
        return exitStatus(for: located.error, parserStatus: parserStatus)
    case let error as KeychainError:
        switch error {
        case .notFound: return 1
        case .invalidName, .badConfiguration, .lastRecipient: return 64
        case .emptySecret, .secretTooLarge, .invalidData, .notText, .notOneTimePassword, .vaultCorrupt,
            .itemCorrupt:
            return 65
        case .noSessionBus, .noSecretService, .noDefaultCollection, .backendFailure, .serverUnavailable, .nameTaken,
            .noHistory:
            return 69
        case .vaultIO, .insecureFile, .holderNotOurs: return 74
        case .timedOut, .vaultBusy, .serverTimedOut, .holderTimedOut: return 75
        case .locked, .permissionDenied, .wrongPassphrase, .noPassphrase, .noNewPassphrase, .noMatchingIdentity,
            .vaultRekeyed, .serverDenied, .notSigned, .cannotSign:
            return 77
        case .openBao(.settingFileHoldsSecret), .openBao(.settingFileMissing), .openBao(.halfAnAppRole),
            .openBao(.mountNotAPath):
            return 64
        case .openBao(.noMount), .openBao(.notKVVersion2), .openBao(.answerNotKVVersion2): return 69
        case .openBao(.noToken), .openBao(.loginRefused): return 77
        case .agePlugin(_, .timedOut, _): return 75
        case .agePlugin(_, .notInPath, _), .agePlugin(_, .failed, _), .agePlugin(_, .needsTerminal, _): return 77
        }
    case is FileError:
        return 74
    case let error as FormatError:
        return error.kind == .wrongPassword ? 77 : error.isUsageError ? 64 : 65
    case let failure as CommandFailure:
        switch failure.kind {
        case .usage: return 64
        case .badData: return 65
        case .io: return 74
        case .notFound, .editorFailed: return 1
        case .commandNotFound: return 127
        case .cannotExecute: return 126
        case .denied: return 77
        case .unavailable: return 69
        case .timedOut, .changedMeanwhile: return 75
        case .exists: return 73
        }
    default:
        // The parser's own errors (64), help and version (0); anything else it calls a plain
        // failure (1, which means "not found" here) is a bug.
        let code = parserStatus(error)
        return code == 1 ? 70 : code
    }
}

/// What happened and what to do next, for one error (without the `keychain-cli:` prefix); nil
/// for the argument parser's own errors and for errors no layer of this tool throws (Main words those).
func failureMessage(_ error: any Error) -> String? {
    switch error {
    case let located as LocatedError: return failureMessage(located.error).map { "\(located.origin): \($0)" }
    case let error as KeychainError: return describedWithHint(error)
    case let failure as CommandFailure: return failure.message
    case let error as FileError: return "\(error). Check the path and its permissions"
    case let error as FormatError: return describedWithHint(error)
    default:
        return nil
    }
}

/// An error met at a place the user wrote (a variable, FILE:LINE of a reference): its exit
/// status and message are the error's, the message after where it was.
struct LocatedError: Error {
    var origin: String
    var error: any Error
}
