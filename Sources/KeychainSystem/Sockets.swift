import Glibc

/// How ``sendAll(_:_:until:)`` ended.
package enum SendOutcome: Equatable {
    case sent
    /// The socket stayed full until the deadline.
    case timedOut
    /// `send` failed with this errno (the peer gone: EPIPE, ECONNRESET).
    case failed(Int32)
}

/// Sends every byte of `bytes` on the non-blocking socket `fd`, never raising SIGPIPE
/// (MSG_NOSIGNAL), waiting in `poll` while the socket is full until `deadline()`
/// (``monotonicSeconds()``), asked afresh at each wait.
package func sendAll(_ fd: Int32, _ bytes: [UInt8], until deadline: () -> Double) -> SendOutcome {
    var sent = 0
    while sent < bytes.count {
        let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if count > 0 {
            sent += count
        } else if count < 0 && errno == EINTR {
            continue
        } else if count < 0 && errno == EAGAIN {
            let limit = deadline()
            while true {
                let left = limit - monotonicSeconds()
                guard left > 0 else { return .timedOut }
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&entry, 1, Int32(min(left * 1000 + 1, 60_000)))
                if ready > 0 || (ready < 0 && errno != EINTR) { break }  // the next send says what broke
            }
        } else {
            return .failed(errno)
        }
    }
    return .sent
}
