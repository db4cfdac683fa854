import Glibc
import KeychainCore

// The commands keychain-cli runs: `exec` replaces itself with one, `serve -- COMMAND` starts one
// beside itself. Both take the arguments after -- as given, and fail alike.

/// Replaces this process with `command` (searched in PATH), keeping the environment as set.
/// - Throws: ``CommandFailure`` (exit 127 when not found, 126 when it cannot be run).
func replaceProcess(with command: [String]) throws -> Never {
    InheritedSignals.restore()
    Startup.restoreForExec()
    var arguments = commandArguments(command)
    execvp(arguments[0]!, &arguments)
    throw commandNotRun(command[0], error: errno)
}

/// Starts `command` (searched in PATH) with this process's environment and the signal
/// dispositions and core limit keychain-cli was given.
/// - Throws: ``CommandFailure`` (exit 127 when not found, 126 when it cannot be run).
func spawn(_ command: [String]) throws -> pid_t {
    var arguments = commandArguments(command)
    defer { for argument in arguments { free(argument) } }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // What exec would give it: the caller's signal mask (serve unblocks the stopping signals for
    // itself only after this), and SIGPIPE as the caller had it (GDBus ignores it in this
    // process; the handlers serve installs are reset by exec anyway).
    var defaults = sigset_t()
    sigemptyset(&defaults)
    if InheritedSignals.sigpipeWasDefault { sigaddset(&defaults, SIGPIPE) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let status = posix_spawnp(&pid, arguments[0]!, nil, &attributes, &arguments, environ)
    guard status == 0 else { throw commandNotRun(command[0], error: status) }
    Startup.restoreCoreLimit(of: pid)
    return pid
}

/// The command's arguments byte for byte, as given after --, NULL-terminated, each to be freed:
/// the parser's strings have any invalid UTF-8 replaced by U+FFFD.
func commandArguments(_ command: [String]) -> [UnsafeMutablePointer<CChar>?] {
    let raw = Startup.argumentsAfterTerminator()
    return (raw?.count == command.count ? raw!.map { strdup($0!) } : command.map { strdup($0) }) + [nil]
}

/// Why `name` did not run, from exec's `error`: 127 when it is not found, else 126.
func commandNotRun(_ name: String, error: Int32) -> CommandFailure {
    let reason = String(cString: strerror(error))
    if error == ENOENT {
        return CommandFailure(
            kind: .commandNotFound, message: "cannot find the command '\(name)' (\(reason)). Check its name and PATH")
    }
    return CommandFailure(kind: .cannotExecute, message: "cannot run '\(name)' (\(reason)). Check its permissions")
}

/// Ends process `pid`, a child of ours: SIGTERM, then SIGKILL after `graceSeconds`, and reaps it.
func terminate(_ pid: pid_t, graceSeconds: Double) {
    kill(pid, SIGTERM)
    var status: Int32 = 0
    let deadline = monotonicSeconds() + graceSeconds
    while waitpid(pid, &status, WNOHANG) == 0 {
        guard monotonicSeconds() < deadline else {
            kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            return
        }
        usleep(10_000)
    }
}
