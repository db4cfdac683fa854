internal import CLinux
import Glibc

// Starting and ending child processes without a shell: the tools keychain-cli runs (git, gpg,
// clipboard programs) and age plugins.

/// Ends process `pid`, a child of ours: SIGTERM, then SIGKILL after `graceSeconds`, and reaps it.
package func terminate(_ pid: Int32, graceSeconds: Double) {
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

/// Starts the program at `path` (or `arguments[0]` searched in PATH) with `arguments`, giving it
/// `descriptors` as its standard input, output and error (nil: /dev/null); every other descriptor
/// of ours is close-on-exec. SIGPIPE and the signals a terminal sends have their default action
/// and none is blocked; `newSession` puts it in a session of its own, away from the terminal
/// (no SIGHUP when it closes, no SIGINT from Ctrl-C). `variables` (NAME=value) replace this
/// process's; `blocked` signals stay blocked until it unblocks them. Returns nil when it cannot be
/// started.
package func spawnProcess(
    _ arguments: [String], path: String? = nil, descriptors: [Int32?], newSession: Bool = false,
    variables: [String]? = nil, blocked: [Int32] = []
) -> Int32? {
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var copies = variables.map { $0.map { strdup($0) } + [nil] }
    defer { for copy in copies ?? [] { free(copy) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (target, source) in descriptors.enumerated() {
        if let source {
            posix_spawn_file_actions_adddup2(&actions, source, Int32(target))
        } else {
            posix_spawn_file_actions_addopen(&actions, Int32(target), "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
        }
    }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    var mask = sigset_t()
    sigemptyset(&mask)
    for signal in blocked { sigaddset(&mask, signal) }
    posix_spawnattr_setsigmask(&attributes, &mask)
    let setsid: Int32 = newSession ? 0x80 : 0  // POSIX_SPAWN_SETSID (glibc 2.26), not imported
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | setsid))
    var pid: pid_t = 0
    let status = withVariables(&copies) { envp in
        path.map { posix_spawn(&pid, $0, &actions, &attributes, &argv, envp) }
            ?? posix_spawnp(&pid, argv[0]!, &actions, &attributes, &argv, envp)
    }
    return status == 0 ? pid : nil
}

package func withVariables(
    _ variables: inout [UnsafeMutablePointer<CChar>?]?, _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32
) -> Int32 {
    guard variables != nil else { return body(environ) }
    return variables!.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// A pipe whose two ends are close-on-exec (a child gets one only by ``spawnProcess``).
package func makePipe() -> (read: Int32, write: Int32)? {
    var ends: [Int32] = [0, 0]
    return keychain_cli_pipe_cloexec(&ends) == 0 ? (ends[0], ends[1]) : nil
}
