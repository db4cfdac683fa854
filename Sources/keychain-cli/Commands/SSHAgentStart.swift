import CLinux
import Glibc
import KeychainCore
import KeychainHolder
import KeychainSSH

/// Where `ssh-agent` listens: the path -a gives (which must not exist), or `agent.sock` in a new
/// private directory (0700) in $XDG_RUNTIME_DIR, else /tmp; removed when the agent ends.
struct AgentSocket {
    let path: String
    /// The directory made for it, removed with it; nil for -a's.
    let directory: String?

    /// - Throws: ``CommandFailure``: -a's path exists (73), no directory can be made (74).
    init(given: String?) throws {
        if let given {
            let absolute = given.hasPrefix("/") ? given : "\(Self.currentDirectory())/\(given)"
            var info = stat()
            guard lstat(absolute, &info) != 0 else {
                throw CommandFailure(
                    kind: .exists,
                    message:
                        "\(quotedPath(given)) exists; remove it (a socket an ended agent left) or give -a another path")
            }
            (path, directory) = (absolute, nil)
            return
        }
        let runtime = Environment.value("XDG_RUNTIME_DIR").flatMap {
            $0.hasPrefix("/") && access($0, W_OK) == 0 ? $0 : nil
        }
        var template = Array(
            "\(runtime ?? Environment.value("TMPDIR") ?? "/tmp")/keychain-cli-agent.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw CommandFailure.io(
                "cannot make a directory for the agent's socket (\(String(cString: strerror(errno)))); give one with -a PATH"
            )
        }
        let made = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        (path, directory) = ("\(made)/agent.sock", made)
    }

    init(path: String, directory: String?) { (self.path, self.directory) = (path, directory) }

    /// Removes what is left: the socket if it is still a socket, and the directory made for it.
    func remove() {
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        if let directory { rmdir(directory) }
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// How `ssh-agent` runs: in the background (a keychain-cli of its own, which gets the keys over
/// descriptor 3), in the foreground (-D), or around a command.
enum AgentStart {
    typealias Limits = (ttl: Double?, idle: Double?)

    /// The shell lines that point ssh at the agent, as OpenSSH's prints them.
    static func variables(socket: String, pid: pid_t, csh: Bool) -> String {
        let quoted = String(decoding: ShellDialect.posix.quoted(Array(socket.utf8)), as: UTF8.self)
        return csh
            ? "setenv SSH_AUTH_SOCK \(quoted);\nsetenv SSH_AGENT_PID \(pid);\necho Agent pid \(pid);\n"
            : "SSH_AUTH_SOCK=\(quoted); export SSH_AUTH_SOCK;\nSSH_AGENT_PID=\(pid); export SSH_AGENT_PID;\n"
                + "echo Agent pid \(pid);\n"
    }

    /// Serves `keys` (emptied once the agent holds them: no copy outlives a lock) in the
    /// foreground, after printing where.
    static func serveInForeground(
        keys: inout [SSHPrivateKey], place: AgentSocket, csh: Bool, limits: Limits, policy: AccessPolicy,
        hooks: SSHAgentServer.Hooks
    ) throws {
        defer { place.remove() }
        let listener = try HolderPlace.listen(at: place.path)
        let server = SSHAgentServer(
            listener: listener, socket: place.path, keys: keys, ttl: limits.ttl, idle: limits.idle, policy: policy,
            hooks: hooks)
        keys.removeAll()
        try writeOutput(Array(variables(socket: place.path, pid: getpid(), csh: csh).utf8))
        try server.run()
    }

    /// Runs `command` with SSH_AUTH_SOCK set, serving until it ends; exits with its status.
    static func run(
        _ command: [String], keys: inout [SSHPrivateKey], place: AgentSocket, limits: Limits, policy: AccessPolicy,
        hooks: SSHAgentServer.Hooks
    ) throws -> Never {
        let listener: Int32
        do { listener = try HolderPlace.listen(at: place.path) } catch {
            place.remove()
            throw error
        }
        let server = SSHAgentServer(
            listener: listener, socket: place.path, keys: keys, ttl: limits.ttl, idle: limits.idle, policy: policy,
            hooks: hooks)
        keys.removeAll()
        let variables =
            Environment.all(
                except: Set(Settings.secretVariables + ["SSH_AUTH_SOCK", "SSH_AGENT_PID"]))
            + ["SSH_AUTH_SOCK=\(place.path)", "SSH_AGENT_PID=\(getpid())"]
        guard let child = spawnProcess(command, descriptors: [0, 1, 2], variables: variables) else {
            place.remove()
            throw commandNotRun(command[0], error: errno)
        }
        let handle = keychain_cli_pidfd_open(child)
        guard handle >= 0 else {
            terminate(child, graceSeconds: 5)
            place.remove()
            throw CommandFailure.unavailable(
                "ssh-agent -- COMMAND needs pidfd_open (Linux 5.3 or later); start the agent with -D instead")
        }
        defer { place.remove() }
        try server.run(until: [handle], forwardingSignalsTo: child)
        var status: Int32 = 0
        while waitpid(child, &status, 0) == -1 && errno == EINTR {}
        place.remove()
        let signal = status & 0x7f
        exit(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
    }
}
