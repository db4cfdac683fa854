import KeychainCore

/// Runs the real git in a tree vault's directory for `history` and `rollback` (``GitRunner``):
/// `git -C DIRECTORY ARGUMENTS…`, its output kept in memory. git missing, the directory outside a
/// work tree, or any other failure of git: ``KeychainError/noHistory(detail:)`` (69) with
/// git's own last line.
func gitRunner(directory: String, timeout: Double) -> GitRunner {
    { arguments, input throws(KeychainError) in
        let run: ToolRun?
        do {
            run = try ToolRun.run(
                ["git", "-C", directory] + arguments, input: input, timeout: max(timeout, 60), limit: 1 << 30,
                installHint: "install git (apt-get install git)")
        } catch let failure as CommandFailure {
            throw .noHistory(detail: failure.message)
        } catch {
            throw .noHistory(detail: "cannot run git: \(error)")
        }
        guard let run else { throw .timedOut(operation: "git \(arguments.first ?? "")", seconds: max(timeout, 60)) }
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
