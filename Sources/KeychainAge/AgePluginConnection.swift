import FoundationEssentials
import Glibc
import KeychainSystem

/// One running plugin and the stanzas exchanged with it (the spec's "IPC protocol": age header
/// stanzas over its standard input and output), each read within the timeout and under limits:
/// a plugin that stays silent is ended (SIGTERM, then SIGKILL) and reaped, one that floods or
/// sends malformed stanzas is refused, never followed into unbounded memory.
final class AgePluginConnection {
    let plugin: String
    private let pid: pid_t
    /// Our end of its standard input (a socket, so that a plugin gone away gives EPIPE, never
    /// SIGPIPE), and of its standard output.
    private var input: Int32
    private var output: Int32
    private let timeout: Double
    private var buffer: [UInt8] = []
    private var ended = false
    private var commands = 0

    /// The longest line read (a stanza's first line), the largest body, and how many commands a
    /// session may send: far above what a real plugin sends, far below what hurts.
    static let lineLimit = 16 << 10
    static let bodyLimit = 64 << 10
    static let commandLimit = 10_000

    /// Starts `age-plugin-NAME --age-plugin=STATE_MACHINE` (no shell, nothing secret in its
    /// arguments or environment), its standard error ours.
    init(plugin: String, stateMachine: String, settings: AgePlugin.Settings) throws(AgePlugin.Failure) {
        guard let path = AgePlugin.executable(plugin, searchPath: settings.searchPath) else {
            throw .notInPath(plugin: plugin)
        }
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw .failed(plugin: plugin, reason: "cannot make a socket (\(String(cString: strerror(errno))))")
        }
        guard let pipe = makePipe() else {
            for fd in ends { close(fd) }
            throw .failed(plugin: plugin, reason: "cannot make a pipe (\(String(cString: strerror(errno))))")
        }
        let started = spawnProcess(
            [AgePlugin.program(plugin), "--age-plugin=\(stateMachine)"], path: path,
            descriptors: [ends[1], pipe.write, STDERR_FILENO], variables: settings.environment)
        close(ends[1])
        close(pipe.write)
        guard let started else {
            close(ends[0])
            close(pipe.read)
            throw .failed(plugin: plugin, reason: "it cannot be started (is it a program this system can run?)")
        }
        (self.plugin, pid, input, output, timeout) = (plugin, started, ends[0], pipe.read, settings.timeout)
    }

    deinit { end() }

    /// Sends the stanza `-> ARGUMENTS…` with `body` (a file key, a PIN: every copy made here
    /// is wiped).
    func send(_ arguments: [String], body: [UInt8] = []) throws(AgePlugin.Failure) {
        var raw = Data(body)
        var encoded = raw.base64EncodedData()
        let first = Array(("-> " + arguments.joined(separator: " ") + "\n").utf8)
        var text: [UInt8] = []
        text.reserveCapacity(first.count + encoded.count + encoded.count / 64 + 1)
        text += first
        // Lines of 64 columns, the last one shorter (empty when the rest is none), no padding.
        let length = encoded.prefix { $0 != UInt8(ascii: "=") }.count
        var start = encoded.startIndex
        while encoded.startIndex + length - start >= 64 {
            text += encoded[start..<start + 64]
            text.append(UInt8(ascii: "\n"))
            start += 64
        }
        text += encoded[start..<encoded.startIndex + length]
        text.append(UInt8(ascii: "\n"))
        defer {
            wipe(&raw)
            wipe(&encoded)
            wipe(&text)
        }
        var sent = 0
        let deadline = monotonicSeconds() + timeout
        while sent < text.count {
            try waitFor(input, events: POLLOUT, until: deadline)
            let count = text[sent...].withUnsafeBytes {
                Glibc.send(input, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw endedEarly()
            }
            sent += count
        }
    }

    /// The next stanza the plugin sends, read within the timeout.
    func receive() throws(AgePlugin.Failure) -> AgeFile.Stanza {
        commands += 1
        guard commands <= Self.commandLimit else { throw fail("it sent more than \(Self.commandLimit) commands") }
        let deadline = monotonicSeconds() + timeout
        let first = try line(until: deadline)
        guard first.starts(with: Array("-> ".utf8)) else { throw fail("it sent a line that is not a stanza") }
        let arguments = first.dropFirst(3).split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard !arguments.isEmpty, arguments.allSatisfy({ !$0.isEmpty && $0.allSatisfy { (0x21...0x7E).contains($0) } })
        else { throw fail("it sent a malformed stanza") }
        var body: [UInt8] = []
        defer { wipe(&body) }
        while true {
            let part = try line(until: deadline)
            guard part.count <= 64 else { throw fail("it sent a stanza body line longer than 64 columns") }
            body += part
            guard body.count <= Self.bodyLimit * 4 / 3 + 64 else { throw fail("it sent a stanza body too large") }
            if part.count < 64 { break }
        }
        guard let decoded = AgeFile.decodeBase64(String(decoding: body, as: UTF8.self)) else {
            throw fail("it sent a stanza body that is not canonical base64")
        }
        return AgeFile.Stanza(arguments: arguments.map { String(decoding: $0, as: UTF8.self) }, body: decoded)
    }

    /// Closes its input and waits (within the timeout) for it to exit; ends it if it does not.
    func finish() {
        guard !ended else { return }
        close(input)
        input = -1
        let deadline = monotonicSeconds() + timeout
        while monotonicSeconds() < deadline {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result == -1 && errno != EINTR) {
                ended = true
                close(output)
                return
            }
            usleep(2_000)
        }
        end()
    }

    /// Ends the plugin (SIGTERM, SIGKILL a second later) and reaps it; closes our ends.
    func end() {
        guard !ended else { return }
        ended = true
        terminate(pid, graceSeconds: 1)
        if input >= 0 { close(input) }
        close(output)
        wipe(&buffer)
    }

    /// Ends the plugin, and the failure that says why.
    func fail(_ reason: String) -> AgePlugin.Failure {
        end()
        return .failed(plugin: plugin, reason: reason)
    }

    /// One line without its newline, at most ``lineLimit`` bytes.
    private func line(until deadline: Double) throws(AgePlugin.Failure) -> [UInt8] {
        var searched = 0
        while true {
            if let newline = buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            searched = buffer.count
            guard buffer.count <= Self.lineLimit else {
                throw fail("it sent a line longer than \(Self.lineLimit) bytes")
            }
            try waitFor(output, events: POLLIN, until: deadline)
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count > 0 else { throw endedEarly() }
            buffer += chunk[..<count]
            wipe(&chunk)
        }
    }

    private func waitFor(_ fd: Int32, events: Int32, until deadline: Double) throws(AgePlugin.Failure) {
        while true {
            let left = deadline - monotonicSeconds()
            guard left > 0 else {
                end()
                throw .timedOut(plugin: plugin, seconds: timeout)
            }
            var polled = pollfd(fd: fd, events: Int16(events), revents: 0)
            let result = poll(&polled, 1, Int32(min(left, 1) * 1000) + 1)
            if result > 0 { return }
            if result < 0 && errno != EINTR { throw fail("cannot wait for it (\(String(cString: strerror(errno))))") }
        }
    }

    /// The failure of a plugin that closed its output or input before the session's end: its
    /// exit status when it has exited (its own messages went to standard error, above).
    private func endedEarly() -> AgePlugin.Failure {
        var status: Int32 = 0
        var result: pid_t = 0
        let deadline = monotonicSeconds() + 1
        repeat {
            result = waitpid(pid, &status, WNOHANG)
            if result == 0 { usleep(5_000) }
        } while result == 0 && monotonicSeconds() < deadline
        guard result == pid else { return fail("it closed its output before the end of the session") }
        ended = true
        if input >= 0 { close(input) }
        close(output)
        let exit =
            status & 0x7F == 0 ? "exited with status \((status >> 8) & 0xFF)" : "was killed by signal \(status & 0x7F)"
        return .failed(
            plugin: plugin, reason: "it \(exit) before the end of the session (its messages, if any, are above)")
    }
}
