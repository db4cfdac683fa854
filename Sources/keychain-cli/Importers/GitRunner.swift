import KeychainCore

/// Runs the real git as `git -C DIRECTORY ARGUMENTS…` with `input` on its standard input, its
/// output kept in memory (at most `limit` bytes), for at most `timeout` seconds.
/// - Throws: ``CommandFailure`` (69) when git is not installed or cannot start, (75) when it
///   does not finish in time.
func runGit(
    _ arguments: [String], in directory: String, input: [UInt8] = [], limit: Int = 256 << 20, timeout: Double = 60
) throws -> ToolRun {
    guard
        let run = try ToolRun.run(
            ["git", "-C", directory] + arguments, input: input, timeout: timeout, limit: limit,
            installHint: "install git (apt-get install git)")
    else {
        throw CommandFailure(
            kind: .timedOut, message: "git \(arguments.first ?? "") did not finish within \(Int(timeout)) s")
    }
    return run
}

/// The ``GitRunner`` a tree vault's `history` and `rollback` read git with: ``runGit(_:in:input:limit:timeout:)``
/// in the vault's directory. git missing or too slow (a minute), the directory outside a work
/// tree, or any other failure of git: ``KeychainError/noHistory(detail:)`` (69) with git's own
/// last line.
func gitRunner(directory: String, timeout: Double) -> GitRunner {
    { arguments, input throws(KeychainError) in
        let run: ToolRun
        do {
            run = try runGit(arguments, in: directory, input: input, limit: 1 << 30, timeout: max(timeout, 60))
        } catch let failure as CommandFailure {
            throw .noHistory(detail: failure.message)
        } catch {
            throw .noHistory(detail: "cannot run git: \(error)")
        }
        guard run.succeeded else {
            if run.errors.contains("not a git repository") {
                throw .noHistory(
                    detail: "the tree vault \(quotedPath(directory)) is not in a git work tree, so it has no history "
                        + "(git init, then commit it)")
            }
            throw .noHistory(detail: "git \(arguments.first ?? "") failed: \(run.reason)")
        }
        return run.output
    }
}
