import FoundationEssentials
import Glibc
import KeychainCore

/// One run of a tool that reads a password manager's data for `import` (gpg, keepassxc-cli): its
/// standard output (the secrets), kept in memory only, and its standard error (its message).
struct ToolRun {
    var status: Int32
    var output: [UInt8]
    var errors: String
    /// Whether it wrote more than the limit asked for (it was ended, and `output` is empty).
    var tooLarge = false

    /// The last line of the tool's messages, shown escaped and shortened: what it says went wrong.
    var reason: String {
        let last = errors.split(whereSeparator: \.isNewline).last.map(String.init) ?? "no message"
        return escapedForDisplay(String(last.prefix(300)))
    }

    /// Runs `arguments` (searched in PATH) with `input` on its standard input, reading what it
    /// writes until it ends, for at most `timeout` seconds (then it is ended and nil returned),
    /// and at most `limit` bytes of output (then it is ended, ``tooLarge``); `awayFromTerminal`:
    /// in a session of its own, so that it cannot ask anything at the terminal; `variables`
    /// (NAME=value) added to its environment.
    /// - Throws: ``CommandFailure`` (69) when the tool is not installed or cannot be started.
    static func run(
        _ arguments: [String], input: [UInt8] = [], timeout: Double, limit: Int = .max, awayFromTerminal: Bool = false,
        installHint: String, variables: [String] = []
    ) throws -> ToolRun? {
        guard executable(named: arguments[0]) != nil else {
            throw CommandFailure(kind: .unavailable, message: "\(arguments[0]) is not installed; \(installHint)")
        }
        guard let stdin = makePipe(), let stdout = makePipe(), let stderr = makePipe() else {
            throw CommandFailure(
                kind: .io, message: "cannot make a pipe for \(arguments[0]) (\(String(cString: strerror(errno))))")
        }
        // The tool gets keychain-cli's environment but its secrets (the vault's passphrase, an
        // OpenBao token): they are ours, as for exec.
        let pid = spawnProcess(
            arguments, descriptors: [stdin.read, stdout.write, stderr.write], newSession: awayFromTerminal,
            variables: Environment.all(except: Set(Settings.secretVariables + ["CREDENTIALS_DIRECTORY"])) + variables)
        for fd in [stdin.read, stdout.write, stderr.write] { close(fd) }
        guard let pid else {
            for fd in [stdin.write, stdout.read, stderr.read] { close(fd) }
            throw CommandFailure(kind: .unavailable, message: "cannot start \(arguments[0]); \(installHint)")
        }
        var run = ToolRun(status: 0, output: [], errors: "")
        var errorBytes: [UInt8] = []
        var pending = input
        var open: [Int32: Bool] = [stdout.read: true, stderr.read: true]
        if pending.isEmpty { close(stdin.write) }
        let deadline = monotonicSeconds() + timeout
        defer {
            for (fd, isOpen) in open where isOpen { close(fd) }
            if !pending.isEmpty { close(stdin.write) }
            wipe(&pending)
        }
        while open.values.contains(true) {
            let left = deadline - monotonicSeconds()
            guard left > 0 else {
                terminate(pid, graceSeconds: 1)
                wipe(&run.output)
                return nil
            }
            var fds = open.filter(\.value).keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if !pending.isEmpty { fds.append(pollfd(fd: stdin.write, events: Int16(POLLOUT), revents: 0)) }
            guard poll(&fds, nfds_t(fds.count), Int32(min(left, 1) * 1000)) >= 0 || errno == EINTR else { break }
            for fd in fds where fd.revents != 0 {
                if fd.fd == stdin.write {
                    let written = pending.withUnsafeBytes { write(fd.fd, $0.baseAddress, $0.count) }
                    if written > 0 { pending.removeFirst(written) }
                    if written < 0 || pending.isEmpty {
                        pending.removeAll()
                        close(stdin.write)
                    }
                    continue
                }
                var chunk = [UInt8](repeating: 0, count: 65_536)
                let count = chunk.withUnsafeMutableBytes { read(fd.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    if fd.fd == stdout.read { run.output += chunk[..<count] } else { errorBytes += chunk[..<count] }
                    if run.output.count > limit {
                        terminate(pid, graceSeconds: 1)
                        wipe(&run.output)
                        wipe(&chunk)
                        run.tooLarge = true
                        return run
                    }
                } else if count == 0 || errno != EINTR {
                    close(fd.fd)
                    open[fd.fd] = false
                }
                wipe(&chunk)
            }
        }
        // Its output closed, it may still run (a tool that left a child holding them, or one that
        // closes them and lingers): waited for within the same time, like the reading.
        var status: Int32 = 0
        while true {
            let ended = waitpid(pid, &status, WNOHANG)
            if ended == pid || (ended == -1 && errno != EINTR) { break }
            guard monotonicSeconds() < deadline else {
                terminate(pid, graceSeconds: 1)
                wipe(&run.output)
                return nil
            }
            usleep(2_000)
        }
        run.status = status
        run.errors = String(decoding: errorBytes, as: UTF8.self)
        return run
    }

    /// `path` as an argument of a tool that takes no `--` (keepassxc-cli, unzip): one that starts
    /// with `-` is given as `./-…`, not read as an option.
    static func pathArgument(_ path: String) -> String { path.hasPrefix("-") ? "./" + path : path }

    /// Whether the tool exited 0.
    var succeeded: Bool { status & 0x7F == 0 && (status >> 8) & 0xFF == 0 }
}
