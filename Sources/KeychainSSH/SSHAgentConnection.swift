import Glibc
import KeychainSystem

/// One request to an ssh-agent and its answer (draft-miller-ssh-agent): a connection to its Unix
/// socket, the request and the answer framed by a uint32 length, every wait bounded by one
/// deadline (`poll`), sends without SIGPIPE (MSG_NOSIGNAL); closed when done.
struct SSHAgentConnection {
    /// The largest answer read (OpenSSH's own limit on an agent message).
    static let maximumMessage = 256 * 1024

    /// The agent's answer (its type byte first) to `request` (a message without its length).
    static func exchange(_ request: [UInt8], socket path: String, timeout: Double) throws(SSHKeyError) -> [UInt8] {
        let deadline = monotonicSeconds() + max(timeout, 0)
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .agent("no socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        try connect(fd, path, deadline: deadline)
        try send(fd, SSHWire.string(request), deadline: deadline)
        var prefix = SSHWireReader(try receive(fd, 4, deadline: deadline), "the agent's answer")
        let length = Int(try prefix.uint32())
        guard length >= 1, length <= maximumMessage else {
            throw .agent("its answer's length \(length) is out of bounds")
        }
        return try receive(fd, length, deadline: deadline)
    }

    private static func connect(_ fd: Int32, _ path: String, deadline: Double) throws(SSHKeyError) {
        guard !path.isEmpty else { throw .agent("no socket is given (SSH_AUTH_SOCK is empty)") }
        while true {
            let result = withUnixSocketAddress(Array(path.utf8)) { Glibc.connect(fd, $0, $1) }
            if result == 0 { return }
            switch errno {
            case EINTR: continue
            case EINPROGRESS:
                try wait(fd, for: Int16(POLLOUT), deadline: deadline, doing: "connecting")
                var failure: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &size)
                guard failure == 0 else {
                    throw .agent("cannot connect to \(path): \(String(cString: strerror(failure)))")
                }
                return
            case EAGAIN:  // its listen queue is full: try again until the deadline
                guard monotonicSeconds() < deadline else { throw .agent("timed out connecting to \(path)") }
                usleep(5_000)
            default: throw .agent("cannot connect to \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    private static func send(_ fd: Int32, _ bytes: [UInt8], deadline: Double) throws(SSHKeyError) {
        switch sendAll(fd, bytes, until: { deadline }) {
        case .sent: return
        case .timedOut: throw .agent("timed out sending the request")
        case .failed(let code): throw .agent("sending the request failed: \(String(cString: strerror(code)))")
        }
    }

    private static func receive(_ fd: Int32, _ count: Int, deadline: Double) throws(SSHKeyError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var received = 0
        while received < count {
            let got = bytes[received...].withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if got > 0 {
                received += got
            } else if got == 0 {
                throw .agent("it closed the connection before answering")
            } else if errno == EAGAIN || errno == EINTR {
                try wait(fd, for: Int16(POLLIN), deadline: deadline, doing: "waiting for its answer")
            } else {
                throw .agent("reading its answer failed: \(String(cString: strerror(errno)))")
            }
        }
        return bytes
    }

    /// Waits until `fd` is ready for `events` or the deadline passes (then `.agent`, timed out).
    private static func wait(_ fd: Int32, for events: Int16, deadline: Double, doing what: String) throws(SSHKeyError) {
        while true {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw .agent("timed out \(what)") }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
            if ready > 0 { return }  // readable, writable, or an error the next call reports
            if ready < 0 && errno != EINTR { throw .agent("poll failed: \(String(cString: strerror(errno)))") }
        }
    }
}
