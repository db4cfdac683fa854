import ArgumentParser
import Glibc
import KeychainAgeRSA
import KeychainCore

/// The entry point: from the arguments to the exit status.
@main
enum Main {
    /// Parses, runs, and turns every error into one line on stderr and its exit code (docs/exit-codes.md).
    static func main() {
        InheritedSignals.record()
        Startup.harden()
        var arguments = CommandLine.arguments.dropFirst()
        // Installed as git-credential-keychain-cli or docker-credential-keychain-cli, git and
        // docker run it with the action alone.
        switch CommandLine.arguments.first?.split(separator: "/").last {
        case "git-credential-keychain-cli": arguments = ["git-credential"] + arguments
        case "docker-credential-keychain-cli": arguments = ["docker-credential"] + arguments
        default: break
        }
        // The processes --clip leaves behind: keychain-cli again, not a command.
        switch arguments.first {
        case ClipboardKeeper.argument: Glibc.exit(ClipboardKeeper.run(Array(arguments.dropFirst())))
        case ClipboardKeeper.toolArgument: Glibc.exit(ClipboardKeeper.execTool(Array(arguments.dropFirst())))
        default: break
        }
        do {
            try Startup.checkArgumentsAreText()
        } catch {
            Glibc.exit(reportingFailure(error))
        }
        // ssh-rsa recipients (libgcrypt's OAEP, which the library alone does not link).
        AgeSSHRSA.register()
        if let status = FastPath.run(arguments) {
            Glibc.exit(status)
        }
        do {
            try UsageCheck.beforeParsing(Array(arguments))
            var command = try KeychainCLI.parseAsRoot(Array(arguments))
            try command.run()
        } catch {
            Glibc.exit(reportingFailure(error))
        }
    }
}

/// Prints `error` as `keychain-cli: <what happened>. <what to do next>` (help and version go to
/// stdout as usual) and returns the exit code.
func reportingFailure(_ error: any Error) -> Int32 {
    let code = exitStatus(for: error) { KeychainCLI.exitCode(for: $0).rawValue }
    if error is ExitCode { return code }  // the command has said what went wrong (doctor)
    if code == 0, !(error is KeychainError || error is CommandFailure || error is FileError || error is FormatError) {
        if let script = KeyCompletion.bashScript(KeychainCLI.fullMessage(for: error)) {
            print(script)
            return 0
        }
        KeychainCLI.exit(withError: error)  // --help, --version: printed by the parser
    }
    let message =
        failureMessage(error)
        ?? (code == 70
            ? "internal error (\(error)). This is a bug: please report it with the command you ran"
            : UsageCheck.message(for: error, arguments: Array(CommandLine.arguments.dropFirst())))
    writeError("keychain-cli: \(message)\n")
    return code
}
