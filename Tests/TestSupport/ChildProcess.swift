import Foundation
import Synchronization

/// A long-running child (a daemon, a server) that the tests signal: started with `posix_spawn`
/// and reaped by this type alone with `waitpid`, so its pid cannot be reused while a signal may
/// still be sent to it.
///
/// A pid stays the child's until its parent reaps it (a zombie keeps it). Foundation's `Process`
/// reaps on a thread of its own, so `if p.isRunning { kill(p.processIdentifier, …) }` could hit
/// whatever process got the pid after that (pid_max is 32768 and the tests start tens of
/// thousands of processes). Here the reaping and the signals share a lock: ``signal(_:)`` only
/// signals a child not reaped yet, and then the pid is still its own.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// The program's name, for messages.
    public let name: String
    /// The raw wait status once reaped.
    private let reaped = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments` and exactly `environment`, with `files` (descriptor,
    /// path, open flags) opened on their descriptors and `descriptors` (theirs, ours: a pipe's
    /// end) duplicated, together at least 0, 1 and 2, and every other descriptor closed.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String],
        files: [(Int32, String, Int32)] = [], descriptors: [(Int32, Int32)] = []
    ) throws {
        pid = try spawn(executable, arguments, environment: environment, files: files, descriptors: descriptors)
        name = URL(fileURLWithPath: executable).lastPathComponent
    }

    /// The raw wait status if it has ended (reaping it then), else nil.
    private func poll() -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            var waited: pid_t
            repeat { waited = waitpid(pid, &status, WNOHANG) } while waited == -1 && errno == EINTR
            if waited == pid { reaped = status }
            return reaped
        }
    }

    public var isRunning: Bool { poll() == nil }

    /// Sends `signal` if the child has not been reaped (its pid is still its own); false if it had
    /// already ended.
    @discardableResult
    public func signal(_ signal: Int32) -> Bool {
        reaped.withLock { reaped in
            guard reaped == nil else { return false }
            return kill(pid, signal) == 0
        }
    }

    /// Waits up to `timeout` seconds for it to end; true if it did.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        eventually(timeout: timeout, interval: 0.005) { !isRunning }
    }

    /// Ends it: SIGCONT (in case it was stopped) and SIGTERM, and after `grace` seconds SIGKILL;
    /// returns once it is reaped.
    public func stop(grace: Double = 3) {
        signal(SIGCONT)
        signal(SIGTERM)
        if !wait(timeout: grace) {
            signal(SIGKILL)
            while !wait(timeout: 60) {}
        }
    }

    /// Waits for it to end, however long that takes.
    public func waitUntilExit() { while !wait(timeout: 3600) {} }

    /// Ends it with SIGKILL (whoever it runs as now) and waits for it.
    public func killAndWait() {
        signal(SIGKILL)
        waitUntilExit()
    }

    /// Its exit status or the number of the signal that ended it (-1 while it runs), as
    /// Foundation's `Process` has it.
    public var terminationStatus: Int32 { status?.code ?? -1 }

    /// Its exit status, or the signal that ended it (`signaled`), once it has ended.
    public var status: (code: Int32, signaled: Bool)? {
        guard let status = poll() else { return nil }
        return (status & 0x7f) != 0 ? (status & 0x7f, true) : ((status >> 8) & 0xff, false)
    }

    /// How it ended ("exited with status 1", "was killed by signal 11 (SIGSEGV)"), or nil while it runs.
    public var ending: String? {
        guard let status = poll() else { return nil }
        let signal = status & 0x7f
        guard signal != 0 else { return "exited with status \((status >> 8) & 0xff)" }
        let name = strsignal(signal).map { String(cString: $0) } ?? "?"
        return "was killed by signal \(signal) (\(name))\((status & 0x80) != 0 ? ", core dumped" : "")"
    }
}

/// Polls `condition` every `interval` seconds until it holds (true) or `timeout` seconds have
/// passed (false): for waiting on an event no one can be told of (a file appears, a process ends,
/// a line is written), instead of a fixed sleep.
@discardableResult
public func eventually(timeout: Double = 30, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows
    -> Bool
{
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(useconds_t(interval * 1_000_000))
    }
}

/// The last `count` characters of the file at `path` ("" if it cannot be read).
public func tail(ofFile path: String, _ count: Int = 2_000) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { return "" }
    return String(String(decoding: data, as: UTF8.self).suffix(count))
}

/// Sends `signal` to `pid`, a process the test did not start itself (a daemon that
/// keychain-cli forked, found in /proc), only if `isStill` says, after a pidfd of it was taken, that
/// it is still the process meant: the pidfd names that process and no later one with its pid, so
/// the check and the signal cannot be split by a reuse. False when it is gone or not it.
@discardableResult
public func signalVerified(_ pid: pid_t, _ signal: Int32, isStill: () -> Bool) -> Bool {
    let descriptor = pidfdOpen(pid, 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    return isStill() && pidfdSendSignal(descriptor, signal, nil, 0) == 0
}

/// glibc's `pidfd_open` and `pidfd_send_signal` (2.36), which Swift's Glibc module does not declare.
private let pidfdOpen: @convention(c) (pid_t, UInt32) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open") else {
        fatalError("glibc 2.36 or later is needed: pidfd_open is missing")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (pid_t, UInt32) -> Int32).self)
}()

private let pidfdSendSignal: @convention(c) (Int32, Int32, UnsafeMutableRawPointer?, UInt32) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_send_signal") else {
        fatalError("glibc 2.36 or later is needed: pidfd_send_signal is missing")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32, UnsafeMutableRawPointer?, UInt32) -> Int32).self)
}()

/// The test's end of a pipe that is a child's input: closing it (calling it, or once it is no
/// longer referenced) is the end of that input, an event the child waits for
/// (`sys.stdin.read()`) instead of a file it polls for or a time it sleeps.
public final class Release: Sendable {
    private let descriptor: Mutex<Int32?>

    init(_ descriptor: Int32) { self.descriptor = Mutex(descriptor) }

    public func callAsFunction() {
        descriptor.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    deinit { callAsFunction() }
}

/// A pipe (read end, write end) whose ends are close-on-exec: no other child, however started,
/// holds one open (one given to a child as its descriptor is duplicated, and so inherited).
func closeOnExecPipe() throws -> [Int32] {
    var ends: [Int32] = [0, 0]
    guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return ends
}

/// Starts `executable` with `arguments` (in the test process's environment, output thrown away)
/// reading a pipe only the test writes to: it goes on until the returned ``Release`` is called.
public func startUntilReleased(_ executable: String, _ arguments: [String]) throws -> (ChildProcess, Release) {
    let ends = try closeOnExecPipe()
    defer { close(ends[0]) }
    let release = Release(ends[1])
    let process = try ChildProcess(
        executable, arguments, environment: ProcessInfo.processInfo.environment,
        files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)], descriptors: [(0, ends[0])])
    return (process, release)
}
