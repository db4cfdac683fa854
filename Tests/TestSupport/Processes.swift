import Foundation

/// What a finished child process left behind.
public struct ProcessResult: Sendable {
    /// The exit status, or the signal number when ``signaled``.
    public var status: Int32
    /// Whether the process was ended by a signal.
    public var signaled = false
    public var stdout: Data
    public var stderr: String
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

public struct ProcessTimedOut: Error, CustomStringConvertible {
    public var command: [String]
    public var description: String { "timed out: \(command.joined(separator: " "))" }
}

/// Runs `executable` with `arguments` and `environment` (exactly: nothing inherited), feeding
/// `stdin` (or /dev/null), capturing stdout and stderr in files so no pipe can fill up.
///
/// Started with `posix_spawn` and waited for with `waitpid`, not with Foundation's `Process`:
/// `Process` learns that a child ended when a socket it gives the child closes, and every
/// descendant inherits that socket, so a command that leaves a process behind (a daemon, a
/// backgrounded `sleep`) kept `isRunning` true, and `waitUntilExit()` could wait for as long as
/// that process lived. The child gets descriptors 0-2 only and an empty signal mask (the test
/// runner's threads block some), as `Process` gives.
/// - Throws: ``ProcessTimedOut`` (after killing it) when it runs longer than `timeout` seconds.
public func runProcess(
    _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String],
    timeout: Double = 60
) throws -> ProcessResult {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("kc-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let (outPath, errPath) = (scratch.appendingPathComponent("out").path, scratch.appendingPathComponent("err").path)
    var inPath = "/dev/null"
    if let stdin {
        inPath = scratch.appendingPathComponent("in").path
        try stdin.write(to: URL(fileURLWithPath: inPath))
    }
    let pid = try spawn(
        executable, arguments, environment: environment,
        files: [
            (0, inPath, O_RDONLY), (1, outPath, O_WRONLY | O_CREAT | O_TRUNC),
            (2, errPath, O_WRONLY | O_CREAT | O_TRUNC),
        ])
    var status: Int32 = 0
    var failure: Int32 = 0
    let ended = eventually(timeout: timeout, interval: 0.002) {
        let waited = waitpid(pid, &status, WNOHANG)
        if waited == -1 && errno != EINTR { failure = errno }
        return waited == pid || failure != 0
    }
    if failure != 0 { throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .ECHILD) }
    if !ended {
        kill(pid, SIGKILL)  // not reaped yet: still its pid
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        throw ProcessTimedOut(command: [executable] + arguments)
    }
    let signaled = (status & 0x7f) != 0
    return ProcessResult(
        status: signaled ? status & 0x7f : (status >> 8) & 0xff, signaled: signaled,
        stdout: try Data(contentsOf: URL(fileURLWithPath: outPath)),
        stderr: String(decoding: try Data(contentsOf: URL(fileURLWithPath: errPath)), as: UTF8.self))
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Swift's Glibc module does
/// not declare.
private let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("glibc 2.34 or later is needed: posix_spawn_file_actions_addclosefrom_np is missing")
    }
    return unsafeBitCast(
        symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()

/// Starts `executable` with `files` opened on their descriptors, `descriptors` (ours) duplicated
/// onto theirs (target, ours), and every other descriptor closed.
func spawn(
    _ executable: String, _ arguments: [String], environment: [String: String], files: [(Int32, String, Int32)],
    descriptors: [(Int32, Int32)] = []
) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (descriptor, path, flags) in files {
        posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o600)
    }
    for (target, source) in descriptors { posix_spawn_file_actions_adddup2(&actions, source, target) }
    _ = addCloseFrom(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in argv + envp { free(pointer) } }
    var pid: pid_t = 0
    let failure = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard failure == 0 else { throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO) }
    return pid
}

/// The `keychain-cli` binary under test: `$KEYCHAIN_CLI`, else the one built beside the tests.
public let keychainCLIPath: String = {
    if let path = ProcessInfo.processInfo.environment["KEYCHAIN_CLI"] { return path }
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("keychain-cli").path
    if FileManager.default.isExecutableFile(atPath: beside) { return beside }
    // Package root/.build/debug, for runners whose argv[0] is elsewhere.
    return packageRoot.appendingPathComponent(".build/debug/keychain-cli").path
}()

/// The package's root directory (Tests/TestSupport/../..).
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A service name no other test uses, so tests sharing a keyring never see each other's items.
public func uniqueService(_ label: String = "t") -> String {
    "\(label)-\(UUID().uuidString.prefix(8))"
}

/// Starts `executable` with `arguments` (in the test process's environment), its output thrown
/// away, so that it never holds a test's pipes open (a server a test starts and ends itself:
/// ``ChildProcess/killAndWait()``).
public func startQuietly(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
    try ChildProcess(
        executable, arguments, environment: ProcessInfo.processInfo.environment,
        files: [(0, "/dev/null", O_RDONLY), (1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)])
}

/// Runs `arguments` (a program and its arguments) as the user nobody (setpriv: needs root), with
/// `environment` and, unless it sets one, PATH /usr/bin:/bin.
public func runAsNobody(_ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil) throws
    -> ProcessResult
{
    try runProcess(
        "/usr/bin/setpriv", ["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"] + arguments, stdin: stdin,
        environment: environment.merging(["PATH": "/usr/bin:/bin"]) { old, _ in old })
}

/// The processes, other than this one, that have `directory` open (read from /proc, nothing
/// signalled): keychain-cli opens a vault's directory just before it waits for the vault's lock
/// (its flock), so a test holding that lock learns here that a writer has got that far.
public func processesWithOpen(_ directory: String) -> [pid_t] {
    guard let resolved = realpath(directory, nil) else { return [] }
    let target = String(cString: resolved)
    free(resolved)
    let files = FileManager.default
    return ((try? files.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
        guard let pid = pid_t(entry), pid != getpid() else { return nil }
        let descriptors = "/proc/\(entry)/fd"
        let open = ((try? files.contentsOfDirectory(atPath: descriptors)) ?? []).contains {
            (try? files.destinationOfSymbolicLink(atPath: "\(descriptors)/\($0)")) == target
        }
        return open ? pid : nil
    }
}
