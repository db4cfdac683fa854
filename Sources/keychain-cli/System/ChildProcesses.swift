import CLinux
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
/// dispositions and core limit keychain-cli was given; `output` become its descriptors 1 and 2
/// (`exec`'s masked output), and `group` its process group (0: one of its own; nil: ours).
/// `variables` (NAME=value) replace this process's (exec --restart-on-change, whose watch
/// threads forbid changing ours). `ownArguments`: `command` is keychain-cli's own (edit's
/// editor), not the words after -- it stands for; `resetting`: signals it gets with their default
/// action whatever this process does with them.
/// - Throws: ``CommandFailure`` (exit 127 when not found, 126 when it cannot be run).
func spawn(
    _ command: [String], output: [Int32] = [], group: pid_t? = nil, mask: sigset_t? = nil,
    variables: [String]? = nil, ownArguments: Bool = false, resetting: [Int32] = []
) throws -> pid_t {
    var arguments = ownArguments ? command.map { strdup($0) } + [nil] : commandArguments(command)
    defer { for argument in arguments { free(argument) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (index, fd) in output.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, Int32(index + 1)) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = signalDefaults()
    for signal in resetting { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setpgroup(&attributes, group ?? 0)
    if var mask { posix_spawnattr_setsigmask(&attributes, &mask) }
    let flags =
        POSIX_SPAWN_SETSIGDEF | (group == nil ? 0 : POSIX_SPAWN_SETPGROUP) | (mask == nil ? 0 : POSIX_SPAWN_SETSIGMASK)
    posix_spawnattr_setflags(&attributes, Int16(flags))
    var pid: pid_t = 0
    var copies = variables.map { $0.map { strdup($0) } + [nil] }
    defer {
        for copy in copies ?? [] {
            if let copy { explicit_bzero(copy, strlen(copy)) }  // the command's secrets
            free(copy)
        }
    }
    let status = withVariables(&copies) { posix_spawnp(&pid, arguments[0]!, &actions, &attributes, &arguments, $0) }
    guard status == 0 else { throw commandNotRun(command[0], error: status) }
    Startup.restoreCoreLimit(of: pid)
    return pid
}

/// What exec would give a command: the caller's signal mask (serve unblocks the stopping signals
/// for itself only after it starts the command), and SIGPIPE as the caller had it (GDBus ignores it
/// in this process; the handlers serve installs are reset by exec anyway).
private func signalDefaults() -> sigset_t {
    var defaults = sigset_t()
    sigemptyset(&defaults)
    if InheritedSignals.sigpipeWasDefault { sigaddset(&defaults, SIGPIPE) }
    return defaults
}

/// A command started as ``spawn(_:output:group:mask:)`` starts it, but held before it runs
/// anything until ``release()``: what must know its pid first (serve's guardian) is told before
/// the command can act. If this process ends before the release, the command ends unrun.
struct HeldCommand {
    let pid: pid_t
    let name: String
    /// The write end of the pipe the command waits on, and the read end of its exec report.
    private let hold: Int32
    private let report: Int32

    /// Starts `command` held, `output` becoming its descriptors 1 and 2.
    /// - Throws: ``CommandFailure`` (126) when no process can be started.
    init(_ command: [String], output: [Int32]) throws {
        guard let hold = makePipe() else { throw commandNotRun(command[0], error: errno) }
        guard let report = makePipe() else {
            for end in [hold.read, hold.write] { close(end) }
            throw commandNotRun(command[0], error: errno)
        }
        var arguments = commandArguments(command)
        defer { for argument in arguments { free(argument) } }
        var defaults = signalDefaults()
        let pid = keychain_cli_spawn_held(
            arguments[0]!, &arguments, output, Int32(output.count), &defaults, hold.read, report.write)
        let error = errno
        close(hold.read)
        close(report.write)
        guard pid > 0 else {
            close(hold.write)
            close(report.read)
            throw commandNotRun(command[0], error: error)
        }
        Startup.restoreCoreLimit(of: pid)
        (self.pid, name, self.hold, self.report) = (pid, command[0], hold.write, report.read)
    }

    /// Lets the command run.
    /// - Throws: ``CommandFailure`` (exit 127 when not found, 126 when it cannot be run); the
    ///   process has then ended, and is reaped.
    func release() throws {
        var go: UInt8 = 1
        _ = write(hold, &go, 1)
        close(hold)
        var error: Int32 = 0
        var count: Int
        repeat { count = read(report, &error, MemoryLayout<Int32>.size) } while count < 0 && errno == EINTR
        close(report)
        guard count == MemoryLayout<Int32>.size else { return }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        throw commandNotRun(name, error: error)
    }
}

/// The path of the executable `name` in PATH, as execvp would find it.
func executable(named name: String) -> String? {
    // A name with a slash is a path, as execvp takes it ($SSH_ASKPASS=/usr/lib/ssh/ssh-askpass).
    if name.contains("/") { return access(name, X_OK) == 0 ? name : nil }
    let path = Environment.value("PATH") ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":", omittingEmptySubsequences: false) {
        let candidate = "\(directory.isEmpty ? "." : directory)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
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
    if error == E2BIG {
        return CommandFailure(
            kind: .cannotExecute,
            message: "cannot run '\(name)' (\(reason)): the kernel takes at most 128 KiB in one variable and "
                + "about 2 MiB in all. Hand a large secret over as a file (exec --file NAME=KEY)")
    }
    return CommandFailure(kind: .cannotExecute, message: "cannot run '\(name)' (\(reason)). Check its permissions")
}

/// The exit status of child `pid` once it has ended (nil while it runs), reaping it.
func exitStatusIfEnded(_ pid: pid_t) -> Int32? {
    var status: Int32 = 0
    return waitpid(pid, &status, WNOHANG) == pid ? status : nil
}
