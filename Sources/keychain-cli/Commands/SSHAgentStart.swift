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

    /// The longest path a client can connect to: sockaddr_un's 108 bytes, with the NUL.
    static let longestPath = 107

    /// - Throws: ``CommandFailure``: -a's path exists (73), is too long or in no directory (64);
    ///   no directory can be made (74).
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
            let parent = String(absolute[..<(absolute.lastIndex(of: "/") ?? absolute.startIndex)])
            guard stat(parent.isEmpty ? "/" : parent, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw CommandFailure.usage("-a \(quotedPath(given)): its directory does not exist; make it first")
            }
            guard absolute.utf8.count <= Self.longestPath else {
                throw CommandFailure.usage(
                    "-a \(quotedPath(given)) is longer than the \(Self.longestPath) bytes a client can connect to; "
                        + "give a shorter path")
            }
            (path, directory) = (absolute, nil)
            return
        }
        // The first place whose socket path a client can connect to: a long $XDG_RUNTIME_DIR
        // (a container's) gives way to $TMPDIR, then /tmp.
        let places = [Environment.value("XDG_RUNTIME_DIR"), Environment.value("TMPDIR"), "/tmp"].compactMap {
            $0.flatMap { $0.hasPrefix("/") && access($0, W_OK) == 0 ? $0 : nil }
        }
        let suffix = "/keychain-cli-agent.XXXXXX/agent.sock"
        guard let base = places.first(where: { $0.utf8.count + suffix.utf8.count <= Self.longestPath }) else {
            throw CommandFailure.io(
                "no directory to make the agent's socket in (/tmp is not writable); give one with -a PATH")
        }
        var template = Array("\(base)/keychain-cli-agent.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw CommandFailure.io(
                "cannot make a directory for the agent's socket (\(String(cString: strerror(errno)))); give one with -a PATH"
            )
        }
        let made = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        (path, directory) = ("\(made)/agent.sock", made)
    }

    /// A socket listening at ``path``.
    /// - Throws: ``CommandFailure`` (74) saying why it cannot.
    func listen() throws -> Int32 {
        do {
            return try HolderPlace.listen(at: path)
        } catch {
            remove()
            throw CommandFailure.io("cannot listen on \(quotedPath(path)): \(error)")
        }
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

    /// `-D`: starts the agent, prints where it listens, and waits for it (it ends with this
    /// process: Ctrl-C, SIGTERM); exits with its status.
    static func serveInForeground(keys: inout [SSHPrivateKey], place: AgentSocket, csh: Bool) throws -> Never {
        let pid = try startAgent(keys: &keys, place: place, withStarter: true)
        try writeOutput(Array(variables(socket: place.path, pid: pid, csh: csh).utf8))
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let signal = status & 0x7f
        exit(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
    }

    /// `-- COMMAND`: starts the agent, then becomes the command with SSH_AUTH_SOCK and
    /// SSH_AGENT_PID set (as OpenSSH's ssh-agent does): its status is the command's, and the
    /// agent ends with it, however it ends (SIGKILL included), removing its socket.
    static func run(_ command: [String], keys: inout [SSHPrivateKey], place: AgentSocket, settings: Settings) throws
        -> Never
    {
        let pid = try startAgent(keys: &keys, place: place, withStarter: true)
        settings.withholdSecretsFromCommands()
        setenv("SSH_AUTH_SOCK", place.path, 1)
        setenv("SSH_AGENT_PID", "\(pid)", 1)
        try replaceProcess(with: command)
    }
}
