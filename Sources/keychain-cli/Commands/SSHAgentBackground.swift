import CLinux
import Glibc
import KeychainCore
import KeychainHolder
import KeychainSSH

/// The agent is always a keychain-cli of its own: the one started runs itself again
/// (`--background-agent`, in a session of its own, with the same options), hands it the opened
/// keys over a socket pair on its descriptor 3 and waits for its word that it listens. The agent
/// never read the backend: no copy of the vault, or of a key's file, is in its memory but the
/// keys it holds. In the background it outlives its starter; with -D or a command it gets
/// SIGTERM when its starter (or the command it became) ends.
extension AgentStart {
    /// The most bytes of keys handed over.
    private static let handoverLimit = 16 << 20

    /// `eval "$(keychain-cli ssh-agent)"`: starts the agent and prints where it listens.
    static func startInBackground(keys: inout [SSHPrivateKey], place: AgentSocket, csh: Bool) throws {
        let pid = try startAgent(keys: &keys, place: place, withStarter: false)
        try writeOutput(Array(variables(socket: place.path, pid: pid, csh: csh).utf8))
    }

    /// The agent's pid once it listens; `keys` are emptied.
    static func startAgent(keys: inout [SSHPrivateKey], place: AgentSocket, withStarter: Bool) throws -> pid_t {
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            place.remove()
            throw CommandFailure.io("cannot make a socket pair for the agent (\(String(cString: strerror(errno))))")
        }
        defer { close(ends[0]) }
        // The same options (the command line's "--", with nothing after it, left out), and where to listen.
        var forwarded = Array(CommandLine.arguments.dropFirst())
        if let end = forwarded.firstIndex(of: "--") { forwarded.removeSubrange(end...) }
        let arguments =
            ["keychain-cli"] + forwarded + ["--background-agent", "--agent-socket", place.path]
            + (place.directory.map { ["--agent-directory", $0] } ?? [])
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var environment: [UnsafeMutablePointer<CChar>?] =
            Environment.all(except: ["KEYCHAIN_KEY_PASSPHRASE"]).map { strdup($0) } + [nil]
        defer { for pointer in argv + environment { free(pointer) } }
        let pid = keychain_cli_spawn_service("/proc/self/exe", &argv, &environment, ends[1], withStarter ? 2 : 1)
        close(ends[1])
        guard pid > 0 else {
            place.remove()
            throw CommandFailure.io("cannot start the agent (\(String(cString: strerror(errno))))")
        }
        var handover: [UInt8] = []
        defer { wipe(&handover) }
        var files = keys.map { $0.openSSHFile() }
        keys.removeAll()
        defer { for index in files.indices { wipe(&files[index]) } }
        // Sized once: an array that grows leaves its earlier storage, and the keys in it, unwiped.
        handover.reserveCapacity(files.reduce(0) { $0 + 4 + $1.count })
        for file in files {
            handover += SSHAgentRequest.framedLength(file.count)
            handover += file
        }
        let sent = handover.withUnsafeBufferPointer { writeAll(ends[0], $0) }
        shutdown(ends[0], Int32(SHUT_WR))
        let said = sent ? readLine(ends[0], seconds: 30) : nil
        guard said == "ready" else {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == 0 { kill(pid, SIGTERM) }
            place.remove()
            throw KeychainError.backendFailure(
                detail:
                    "the agent did not start: \(said.map { escapedForDisplay(String($0.prefix(300))) } ?? "it said nothing")"
            )
        }
        return pid
    }

    /// The agent started by ``startAgent(keys:place:withStarter:)``.
    static func serveInBackground(place: AgentSocket, limits: Limits, policy: AccessPolicy, hooks: SSHAgentServer.Hooks)
        throws
    {
        let starter: Int32 = 3
        func tell(_ line: String) {
            _ = Array((line + "\n").utf8).withUnsafeBufferPointer { writeAll(starter, $0) }
            close(starter)
        }
        // A daemon keeps no directory busy (the one it was started in may be a USB stick's).
        _ = chdir("/")
        guard var handover = try? readAll(starter, limit: handoverLimit, name: "the keys handed over") else {
            tell("error: the keys were not handed over whole")
            return
        }
        defer { wipe(&handover) }
        var keys: [SSHPrivateKey] = []
        var offset = 0
        while offset + 4 <= handover.count {
            let count = handover[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            guard offset + 4 + count <= handover.count else { break }
            var file = Array(handover[offset + 4..<offset + 4 + count])
            defer { wipe(&file) }
            offset += 4 + count
            guard
                let key = try? SSHPrivateKey(
                    file: file, passphrase: { () throws(SSHKeyError) in throw .wrongPassphrase })
            else {
                tell("error: a key handed over cannot be read")
                return
            }
            keys.append(key)
        }
        let listener: Int32
        do { listener = try place.listen() } catch {
            tell("error: \((error as? CommandFailure)?.message ?? "\(error)")")
            return
        }
        let server = SSHAgentServer(
            listener: listener, socket: place.path, keys: keys, ttl: limits.ttl, idle: limits.idle, policy: policy,
            hooks: hooks)
        keys.removeAll()
        tell("ready")
        defer { place.remove() }
        try server.run()
    }

    /// A line the other end writes within `seconds`, without its newline; nil at end of file first.
    private static func readLine(_ fd: Int32, seconds: Double) -> String? {
        var line: [UInt8] = []
        let deadline = monotonicSeconds() + seconds
        var byte: UInt8 = 0
        while line.count < 4096 {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let left = Int32(max(0, (deadline - monotonicSeconds()) * 1000))
            guard left > 0, poll(&poller, 1, left) > 0, read(fd, &byte, 1) == 1 else { break }
            if byte == UInt8(ascii: "\n") { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
        return line.isEmpty ? nil : String(decoding: line, as: UTF8.self)
    }
}

/// `ssh-add -c`: each use of the key asked through $SSH_ASKPASS (with SSH_ASKPASS_PROMPT=confirm,
/// as OpenSSH's agent asks), allowed when it exits 0 within two minutes.
enum AgentConfirmation {
    @Sendable static func ask(_ prompt: String) -> Bool {
        guard let askpass = Environment.value("SSH_ASKPASS"), !askpass.isEmpty else { return false }
        let run = try? ToolRun.run(
            [askpass, prompt], timeout: 120, limit: 4096, awayFromTerminal: true,
            installHint: "set SSH_ASKPASS to a program that asks", variables: ["SSH_ASKPASS_PROMPT=confirm"])
        return run?.status == 0
    }
}
