import CLinux
import Glibc
import KeychainCore

/// The process `--clip` leaves behind: keychain-cli started again with ``argument``, in a session
/// of its own, undumpable like every keychain-cli process. It reads the secret from its standard
/// input, starts the clipboard tool in the foreground with the secret on a pipe, reads the
/// clipboard back until it holds the secret, says "ok" on its standard output (the command's
/// pipe), and keeps only the secret's SHA-256. After the given seconds:
/// - when its tool still owns the clipboard, it ends the tool, which empties the clipboard;
/// - when another program took the clipboard (a clipboard manager keeps copies that way), it
///   empties the clipboard only if it still holds the secret and no later `--clip` has taken over
///   (each clearer tells the earlier ones, by SIGUSR1, once its own copy is in place).
/// SIGTERM or SIGINT end it at once, and its tool with it (which empties the clipboard); the tool
/// also gets SIGTERM if the clearer is killed outright (PR_SET_PDEATHSIG).
enum ClipboardKeeper {
    /// Not a command: what `--clip` runs (Main dispatches on it before parsing).
    static let argument = "--internal-clipboard-keeper"
    /// Not a command either: how the clearer starts its tool, tied to its own life.
    static let toolArgument = "--internal-clipboard-tool"

    /// How long the tool gets to take the secret, and a read of the clipboard to answer.
    static let startSeconds = 5.0
    static let pasteSeconds = 2.0

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let tool = ClipboardTool(rawValue: arguments[0]),
            let seconds = Int(arguments[1]), seconds > 0
        else { return 64 }
        // Whatever else the command inherited (a CI runner's pipe, a shell's descriptor) must
        // not be held open for the whole time: whoever waits for its end would wait as long.
        closefrom(3)
        KeeperSignals.install()
        guard var secret = (try? readToEnd(STDIN_FILENO, limit: maximumSecretSize, operation: "")) ?? nil else {
            return report("the secret could not be read")
        }
        let fingerprint = secretFingerprint(secret)
        guard let input = makePipe(), let errors = makePipe(),
            let copier = spawnProcess(
                ["keychain-cli", toolArgument, String(getpid())] + tool.copyCommand, path: "/proc/self/exe",
                descriptors: [input.read, nil, errors.write])
        else {
            wipe(&secret)
            return report("\(tool.rawValue) could not be started")
        }
        close(input.read)
        close(errors.write)
        // The time limit starts now: a display that stops answering must not hold the clearer, nor
        // the command waiting for it, on a secret larger than the pipe holds.
        let started = monotonicSeconds()
        let written = write(secret, to: input.write, until: started + startSeconds)
        close(input.write)
        wipe(&secret)
        secret = []
        guard written else {
            terminate(copier, graceSeconds: 1)
            return report("timeout")
        }

        // Until the clipboard gives the secret back, the tool fails, or time runs out. The tool
        // may have ended already because a clipboard manager took the clipboard, with the secret.
        var copierEnded = false
        while true {
            let ended = exitStatusIfEnded(copier)
            if clipboardFingerprint(tool) == fingerprint {
                copierEnded = ended != nil
                break
            }
            if let status = ended {
                let message = drain(errors.read).text.split(separator: "\n")
                    .last { !$0.hasPrefix("Waiting for selection") && !$0.trimming().isEmpty }
                return report(
                    status != 0 && message != nil
                        ? String(message!) : "\(tool.rawValue) lost the clipboard before it could be read back")
            }
            guard monotonicSeconds() - started < startSeconds, KeeperSignals.stop == 0 else {
                terminate(copier, graceSeconds: 1)
                return report("timeout")
            }
            usleep(20_000)
        }
        _ = report("ok")
        supersedeEarlierKeepers()

        // Until the time is up: the tool's messages (one a paste, for xclip) are read and dropped.
        let deadline = monotonicSeconds() + Double(seconds)
        while case let left = deadline - monotonicSeconds(), left > 0, KeeperSignals.stop == 0 {
            if copierEnded {
                usleep(UInt32(min(left, 1) * 1_000_000))
                continue
            }
            var poller = pollfd(fd: errors.read, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, Int32(min(left, 3_600) * 1000) + 1) > 0 {
                // Its end of the pipe closed: it lost the clipboard to another program, or was ended.
                copierEnded = drain(errors.read).ended
            }
        }
        if !copierEnded, exitStatusIfEnded(copier) == nil {
            terminate(copier, graceSeconds: 1)
        } else if KeeperSignals.superseded == 0, clipboardFingerprint(tool) == fingerprint {
            runQuietly(tool.clearCommand)
        }
        terminate(copier, graceSeconds: 1)  // reaped, ended or not: no zombie is left to init
        return 0
    }

    /// The clearer's tool, started through keychain-cli so that it gets SIGTERM when the clearer
    /// ends, however it ends: `arguments` are the clearer's pid and the tool's command.
    static func execTool(_ arguments: [String]) -> Int32 {
        guard arguments.count > 1, let parent = pid_t(arguments[0]) else { return 64 }
        _ = keychain_cli_set_parent_death_signal(SIGTERM)
        guard getppid() == parent else { return 69 }  // the clearer is already gone
        var argv = arguments.dropFirst().map { strdup($0) } + [nil]
        execvp(argv[0]!, &argv)
        let message = "cannot run \(arguments[1]): \(String(cString: strerror(errno)))\n"
        writeError(message)
        return 69
    }

    /// Tells every other clearer of this user that a later copy is in place (SIGUSR1), so that
    /// none of them clears the clipboard by its content: a copy of the same secret is this one's.
    private static func supersedeEarlierKeepers() {
        guard let directory = opendir("/proc") else { return }
        defer { closedir(directory) }
        let me = getpid()
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = pid_t(name), pid != me else { continue }
            var status = stat()
            guard stat("/proc/\(pid)", &status) == 0, status.st_uid == getuid(),
                let command = processCommand(UInt32(pid)), command.arguments.dropFirst().first == argument
            else { continue }
            kill(pid, SIGUSR1)
        }
    }

    /// Writes `bytes` to the pipe `fd` (made non-blocking) unless `deadline` passes first.
    private static func write(_ bytes: [UInt8], to fd: Int32, until deadline: Double) -> Bool {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if count > 0 {
                offset += count
                continue
            }
            guard count < 0, errno == EAGAIN || errno == EINTR else { return false }
            let left = deadline - monotonicSeconds()
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard left > 0, KeeperSignals.stop == 0 else { return false }
            _ = poll(&poller, 1, Int32(left * 1000) + 1)
        }
        return true
    }

    /// One line to the command waiting on standard output, which is then closed.
    private static func report(_ message: String) -> Int32 {
        let line = escapedForDisplay(String(message.split(separator: "\n").first ?? ""))
        var text = line + "\n"
        text.withUTF8 { _ = writeAll(STDOUT_FILENO, $0) }
        let null = open("/dev/null", O_WRONLY)
        dup2(null, STDOUT_FILENO)
        close(null)
        return message == "ok" ? 0 : 69
    }

    /// What there is to read on `fd` now, without waiting (its first 4 KiB as text), and whether
    /// the pipe has ended.
    private static func drain(_ fd: Int32) -> (text: String, ended: Bool) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        var kept: [UInt8] = []
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var ended = false
        while poll(&poller, 1, 0) > 0 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                ended = true
                break
            }
            if kept.count < 4096 { kept += chunk[0..<count] }
        }
        return (String(String(decoding: kept, as: UTF8.self).trimming()), ended)
    }

    /// The SHA-256 of what the clipboard holds now, or nil when it cannot be read in time.
    private static func clipboardFingerprint(_ tool: ClipboardTool) -> [UInt8]? {
        guard let output = makePipe() else { return nil }
        defer { close(output.read) }
        guard let reader = spawnProcess(tool.pasteCommand, descriptors: [nil, output.write, nil]) else {
            close(output.write)
            return nil
        }
        close(output.write)
        var content: [UInt8] = []
        defer { wipe(&content) }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        defer { wipe(&chunk) }
        let deadline = monotonicSeconds() + pasteSeconds
        while content.count <= maximumSecretSize {
            var poller = pollfd(fd: output.read, events: Int16(POLLIN), revents: 0)
            let left = deadline - monotonicSeconds()
            guard left > 0, poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { break }
            let count = chunk.withUnsafeMutableBytes { read(output.read, $0.baseAddress, $0.count) }
            guard count > 0 else {
                terminate(reader, graceSeconds: 0.5)
                return secretFingerprint(content)
            }
            content += chunk[0..<count]
        }
        terminate(reader, graceSeconds: 0.5)
        return nil
    }

    private static func runQuietly(_ command: [String]) {
        guard let pid = spawnProcess(command, descriptors: [nil, nil, nil]) else { return }
        let deadline = monotonicSeconds() + pasteSeconds
        while exitStatusIfEnded(pid) == nil {
            guard monotonicSeconds() < deadline else { return terminate(pid, graceSeconds: 0.5) }
            usleep(10_000)
        }
    }
}

/// What the clearer's signal handlers saw: SIGTERM or SIGINT (stop now), SIGUSR1 (a later copy
/// is in place). Plain flags: a handler may do no more than set them.
enum KeeperSignals {
    nonisolated(unsafe) static var stop: sig_atomic_t = 0
    nonisolated(unsafe) static var superseded: sig_atomic_t = 0

    static func install() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in KeeperSignals.stop = 1 }
        sigaction(SIGTERM, &action, nil)
        sigaction(SIGINT, &action, nil)
        action.__sigaction_handler.sa_handler = { _ in KeeperSignals.superseded = 1 }
        sigaction(SIGUSR1, &action, nil)
        signal(SIGHUP, SIG_IGN)
        var started = sigset_t()
        sigemptyset(&started)
        sigaddset(&started, SIGUSR1)
        sigprocmask(SIG_UNBLOCK, &started, nil)  // blocked by the command that started this one
    }
}
