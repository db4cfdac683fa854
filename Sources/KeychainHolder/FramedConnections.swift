import CLinux
import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// How a request is carried out: at once, on the serving thread (it never waits for anything),
/// or on a thread of its own in one of the worker lanes, at most so many of each at once.
package enum FramedLane: Sendable, Equatable {
    case now
    case worker(Int)
}

/// The peer of a connection, as the kernel gave it when it connected (SO_PEERCRED).
package struct FramedPeer: Sendable {
    package let pid: pid_t
    package let uid: uid_t
    /// The connection's number, unique for the server's life: what its client said before
    /// (the host an ssh-agent's client is bound to) is known by it.
    package let connection: Int
    /// The executable the process ran when it connected (/proc/PID/exe then): a process that
    /// connects and then execs an allowed program, or hands its connection to a child that does
    /// not, is told apart by it.
    package let executable: String?
}

/// The clients of a socket that speaks messages framed by a 4-byte big-endian length (unlock's
/// holder, the ssh-agent), served from one thread by `poll`: a connection costs a descriptor and
/// its buffers, never a thread, so clients that keep theirs open (an `exec` running for hours, a
/// prompt left unanswered, a socket that sends nothing) hold no one up. Only the user's own
/// processes are served (its uid, SO_PEERCRED). A request is read as its bytes arrive, then
/// answered at once on this thread (so that `lock` always gets through) or on a worker thread of
/// its lane (a vault's read or write, which may wait for its lock or its file; a confirmation).
/// One request per connection is under way at a time; its answer is sent before the next is read.
package final class FramedConnections<Request: Sendable> {
    /// The most connections kept; past it, the one unused longest is closed (its client, if it
    /// comes back, connects again).
    static var maximumConnections: Int { 512 }
    /// Seconds an answer may wait for its client to read it.
    static var outputSeconds: Double { 30 }
    /// Bytes of answers a client may leave unread before nothing more of its requests is read.
    static var outputBacklog: Int { 1 << 20 }

    private let listener: Int32
    /// The largest message read; also the most kept, in all, of requests not yet whole.
    private let limit: Int
    /// The most requests of each worker lane carried out at once.
    private let workers: [Int]
    private let decode: ([UInt8], FramedPeer) -> Request?
    private let lane: (Request) -> FramedLane
    /// The request's answer, framed; nil closes the connection.
    private let answer: @Sendable (Request, FramedCancellation) -> [UInt8]?
    /// Told the number of each connection closed.
    var closed: ((Int) -> Void)?
    private var connections: [Int: Connection] = [:]
    private var nextIdentifier = 0
    /// Out of descriptors with no connection to close: the listener is not polled until one closes.
    private var listenerPaused = false
    /// Bytes of requests read and not yet whole, over all connections.
    private var pending = 0
    private var waiting: [(Int, Request, Int)] = []
    private var running: [Int]
    /// Answers the workers finished: the connection's identifier, the lane, the framed reply.
    private let finished = Locked<[(Int, Int, [UInt8]?)]>([])
    private let wake: (read: Int32, write: Int32)

    /// Whether a request is being carried out: the server does not end before it is answered.
    var isWorking: Bool { running.contains { $0 > 0 } }

    /// - Parameters:
    ///   - limit: the largest message read.
    ///   - workers: the most requests carried out at once in each lane `lane` names.
    ///   - decode: a whole message's body as a request (nil closes the connection); the body is
    ///     wiped after.
    init(
        listener: Int32, limit: Int, workers: [Int], decode: @escaping ([UInt8], FramedPeer) -> Request?,
        lane: @escaping (Request) -> FramedLane, answer: @escaping @Sendable (Request, FramedCancellation) -> [UInt8]?
    ) throws(FileError) {
        (self.listener, self.limit, self.workers) = (listener, limit, workers)
        (self.decode, self.lane, self.answer) = (decode, lane, answer)
        running = workers.map { _ in 0 }
        var ends: [Int32] = [0, 0]
        guard keychain_cli_pipe_cloexec(&ends) == 0 else { throw FileError("cannot make a pipe") }
        for fd in ends + [listener] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        wake = (ends[0], ends[1])
    }

    deinit {
        for connection in connections.values { close(connection.fd) }
        close(wake.read)
        close(wake.write)
    }

    /// Serves until one of `events` is readable, or a request is answered: accepts, reads,
    /// answers, writes.
    func serve(until events: [Int32]) {
        var identifiers: [Int] = []
        var pollers = [pollfd(fd: listener, events: Int16(listenerPaused ? 0 : POLLIN), revents: 0)]
        pollers.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
        for fd in events { pollers.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let first = pollers.count
        for (identifier, connection) in connections {
            var events: Int32 = connection.busy || connection.backlogged ? 0 : POLLIN
            if connection.written < connection.output.count { events |= POLLOUT }
            identifiers.append(identifier)
            pollers.append(pollfd(fd: connection.fd, events: Int16(events), revents: 0))
        }
        guard poll(&pollers, nfds_t(pollers.count), -1) > 0 else { return }
        for (index, identifier) in identifiers.enumerated() {
            let events = Int32(pollers[index + first].revents)
            if events & (POLLERR | POLLHUP | POLLNVAL) != 0 && events & POLLIN == 0 {
                drop(identifier)
                continue
            }
            if events & POLLOUT != 0 {
                flush(identifier)
                take(identifier)  // what waited for its answers to be read
            }
            if events & POLLIN != 0 { read(identifier) }
        }
        if pollers[1].revents != 0 { collect() }
        if pollers[0].revents & Int16(POLLIN) != 0 { accept() }
        closeStalled()
    }

    private func accept() {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            guard fd >= 0 else {
                // Out of descriptors: the connection unused longest makes room, or the listener
                // waits for one to close (it would be readable again at once: a busy loop).
                if errno == EMFILE || errno == ENFILE {
                    if let oldest = oldestIdle() {
                        drop(oldest)
                        continue
                    }
                    listenerPaused = true
                }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var peer = keychain_cli_peer()
            guard keychain_cli_peer_credentials(fd, &peer) == 0, peer.uid == geteuid() else {
                close(fd)
                continue
            }
            if connections.count >= Self.maximumConnections {
                // The connection unused longest, and not waiting for an answer, makes room.
                guard let oldest = oldestIdle() else {
                    close(fd)
                    continue
                }
                drop(oldest)
            }
            nextIdentifier += 1
            connections[nextIdentifier] = Connection(
                fd: fd,
                peer: FramedPeer(
                    pid: peer.pid, uid: peer.uid, connection: nextIdentifier,
                    executable: AccessPolicy.executable(ofProcess: UInt32(peer.pid))),
                lastActive: bootSeconds())
        }
    }

    /// The connection unused longest that is not waiting for an answer.
    private func oldestIdle() -> Int? {
        connections.filter { !$0.value.busy }.min { $0.value.lastActive < $1.value.lastActive }?.key
    }

    private func read(_ identifier: Int) {
        guard let connection = connections[identifier] else { return }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        defer { wipe(&chunk) }
        while true {
            let count = recv(connection.fd, &chunk, chunk.count, receiveFlags)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard count > 0, pending + count <= limit else { return drop(identifier) }
            connection.input.append(Array(chunk[..<count]))
            connection.inputCount += count
            pending += count
            connection.lastActive = bootSeconds()
        }
        take(identifier)
    }

    /// Carries out the whole requests `identifier` sent, one after the other, until one goes to a
    /// worker, none is whole, or its answers wait unread (``outputBacklog``): a loop, not a
    /// recursion, so that thousands of requests sent at once cost no stack.
    private func take(_ identifier: Int) {
        while let connection = connections[identifier], !connection.busy, !connection.backlogged,
            let count = connection.announced
        {
            guard count <= limit else { return drop(identifier) }
            guard connection.inputCount >= 4 + count else { return }
            _ = connection.take(4)
            var body = connection.take(count)
            pending -= 4 + count
            let decoded = decode(body, connection.peer)
            wipe(&body)
            guard let request = decoded else { return drop(identifier) }
            let cancellation = FramedCancellation()
            connection.underWay = cancellation
            switch lane(request) {
            case .now:
                guard var framed = answer(request, cancellation) else { return drop(identifier) }
                append(identifier, framed)
                wipe(&framed)
            case .worker(let index):
                waiting.append((identifier, request, index))
                startWorkers()
                return
            }
        }
    }

    private func startWorkers() {
        var index = 0
        while index < waiting.count {
            let (identifier, request, lane) = waiting[index]
            guard running[lane] < workers[lane], let cancellation = connections[identifier]?.underWay else {
                index += 1
                continue
            }
            let (answer, finished, wake) = (self.answer, self.finished, self.wake.write)
            let started = startThread {
                var reply = answer(request, cancellation)
                finished.withLock { $0.append((identifier, lane, reply)) }
                if reply != nil { wipe(&reply!) }
                var byte: UInt8 = 1
                _ = Glibc.write(wake, &byte, 1)
            }
            guard started == nil else { return }
            waiting.remove(at: index)
            running[lane] += 1
        }
    }

    /// Takes the answers the workers finished.
    private func collect() {
        var drained = [UInt8](repeating: 0, count: 256)
        while Glibc.read(wake.read, &drained, drained.count) > 0 {}
        var done = finished.withLock { done in
            defer { done = [] }
            return done
        }
        for index in done.indices {
            running[done[index].1] -= 1
            guard connections[done[index].0] != nil else { continue }
            if let reply = done[index].2 { queue(done[index].0, reply) } else { drop(done[index].0) }
        }
        for index in done.indices where done[index].2 != nil { wipe(&done[index].2!) }
        startWorkers()
    }

    /// Queues a worker's answer, then carries out what the client sent meanwhile.
    private func queue(_ identifier: Int, _ framed: [UInt8]) {
        append(identifier, framed)
        take(identifier)
    }

    /// Adds an answer to what is sent to `identifier`, and sends what it can.
    private func append(_ identifier: Int, _ framed: [UInt8]) {
        guard let connection = connections[identifier] else { return }
        connection.output += framed
        connection.underWay = nil
        connection.lastActive = bootSeconds()
        flush(identifier)
    }

    private func flush(_ identifier: Int) {
        guard let connection = connections[identifier] else { return }
        while connection.written < connection.output.count {
            let count = connection.output.withUnsafeBytes { bytes in
                send(
                    connection.fd, bytes.baseAddress! + connection.written, bytes.count - connection.written, sendFlags)
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard count > 0 else { return drop(identifier) }
            connection.written += count
            connection.lastActive = bootSeconds()
        }
        if connection.written == connection.output.count {
            wipe(&connection.output)
            (connection.output, connection.written) = ([], 0)
        }
    }

    /// Closes the connections whose client has not read its answer for ``outputSeconds``.
    private func closeStalled() {
        let now = bootSeconds()
        for (identifier, connection) in connections
        where connection.written < connection.output.count && now - connection.lastActive > Self.outputSeconds {
            drop(identifier)
        }
    }

    private func drop(_ identifier: Int) {
        guard let connection = connections.removeValue(forKey: identifier) else { return }
        listenerPaused = false
        closed?(identifier)
        pending -= connection.inputCount
        for index in connection.input.indices { wipe(&connection.input[index]) }
        wipe(&connection.output)
        close(connection.fd)
        connection.underWay?.cancel()
        waiting.removeAll { $0.0 == identifier }
    }
}
