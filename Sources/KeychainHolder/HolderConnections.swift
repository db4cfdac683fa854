import CLinux
import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// The holder's clients, served from one thread by `poll`: a connection costs a descriptor and its
/// buffers, never a thread, so clients that keep theirs open (an `exec` running for hours, a
/// prompt left unanswered, a socket that sends nothing) hold no one up. A request is read as its
/// bytes arrive; `lock` and a status are answered at once, on this thread, so that `lock` always
/// gets through; the reads and writes of a vault, which may wait for its lock or its file, run
/// on threads of their own (at most ``workers`` at once, the rest waiting their turn).
final class HolderConnections {
    /// The most connections kept; past it, the one unused longest is closed (its client, if it
    /// comes back, connects again).
    static let maximumConnections = 512
    /// The most requests carried out at once: reads (and holds) and writes apart, so that reads,
    /// which take no lock, never wait behind writes waiting for a vault's.
    static let workers = (reads: 48, writes: 16)
    /// Seconds an answer may wait for its client to read it.
    static let outputSeconds = 30.0

    private let listener: Int32
    private let answer: @Sendable (HolderRequest, Cancellation) -> HolderReply
    private var connections: [Int: Connection] = [:]
    private var nextIdentifier = 0
    /// Bytes of requests read and not yet whole, over all connections.
    private var pending = 0
    private var waiting: [(Int, HolderRequest)] = []
    private var running = (reads: 0, writes: 0)
    /// Answers the workers finished: the connection's identifier, whether it wrote, the reply.
    private let finished = Locked<[(Int, Bool, [UInt8])]>([])
    private let wake: (read: Int32, write: Int32)

    /// Whether a request is being carried out: the holder does not end before it is answered.
    var isWorking: Bool { running.reads + running.writes > 0 }

    init(listener: Int32, answer: @escaping @Sendable (HolderRequest, Cancellation) -> HolderReply)
        throws(KeychainError)
    {
        (self.listener, self.answer) = (listener, answer)
        var ends: [Int32] = [0, 0]
        guard keychain_cli_pipe_cloexec(&ends) == 0 else {
            throw .vaultIO(detail: FileError("cannot make the holder's pipe").description)
        }
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
        var pollers = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
        pollers.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
        for fd in events { pollers.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let first = pollers.count
        for (identifier, connection) in connections {
            var events: Int32 = connection.busy ? 0 : POLLIN
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
            if events & POLLOUT != 0 { flush(identifier) }
            if events & POLLIN != 0 { read(identifier) }
        }
        if pollers[1].revents != 0 { collect() }
        if pollers[0].revents & Int16(POLLIN) != 0 { accept() }
        closeStalled()
    }

    private func accept() {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var peer = keychain_cli_peer()
            guard keychain_cli_peer_credentials(fd, &peer) == 0, peer.uid == geteuid() else {
                close(fd)
                continue
            }
            if connections.count >= Self.maximumConnections {
                // The connection unused longest, and not waiting for an answer, makes room.
                guard
                    let oldest = connections.filter({ !$0.value.busy }).min(by: {
                        $0.value.lastActive < $1.value.lastActive
                    })
                else {
                    close(fd)
                    continue
                }
                drop(oldest.key)
            }
            nextIdentifier += 1
            connections[nextIdentifier] = Connection(fd: fd, lastActive: bootSeconds())
        }
    }

    private func read(_ identifier: Int) {
        guard let connection = connections[identifier] else { return }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        defer { wipe(&chunk) }
        while true {
            let count = recv(connection.fd, &chunk, chunk.count, receiveFlags)
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            guard count > 0, pending + count <= HolderWire.limit else { return drop(identifier) }
            connection.input.append(Array(chunk[..<count]))
            connection.inputCount += count
            pending += count
            connection.lastActive = bootSeconds()
        }
        take(identifier)
    }

    /// Carries out the next whole request `identifier` sent, if there is one and none is under way.
    private func take(_ identifier: Int) {
        guard let connection = connections[identifier], !connection.busy, let count = connection.announced else {
            return
        }
        guard count <= HolderWire.limit else { return drop(identifier) }
        guard connection.inputCount >= 4 + count else { return }
        _ = connection.take(4)
        var body = connection.take(count)
        defer { wipe(&body) }
        pending -= 4 + count
        var data = Data(body)
        let decoded = try? JSONDecoder().decode(HolderRequest.self, from: data)
        wipe(&data)
        guard let request = decoded else { return drop(identifier) }
        let cancellation = Cancellation()
        connection.underWay = cancellation
        switch request {
        case .forget, .status: reply(identifier, answer(request, cancellation))
        case .hold, .use:
            waiting.append((identifier, request))
            startWorkers()
        }
    }

    private func startWorkers() {
        var index = 0
        while index < waiting.count {
            let (identifier, request) = waiting[index]
            let writes: Bool
            if case .use(_, _, let operation) = request { writes = operation.writes } else { writes = false }
            guard writes ? running.writes < Self.workers.writes : running.reads < Self.workers.reads,
                let cancellation = connections[identifier]?.underWay
            else {
                index += 1
                continue
            }
            let (answer, finished, wake) = (self.answer, self.finished, self.wake.write)
            let started = startThread {
                var reply = HolderWire.framed(answer(request, cancellation)) ?? []
                finished.withLock { $0.append((identifier, writes, reply)) }
                wipe(&reply)
                var byte: UInt8 = 1
                _ = Glibc.write(wake, &byte, 1)
            }
            guard started == nil else { return }
            waiting.remove(at: index)
            if writes { running.writes += 1 } else { running.reads += 1 }
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
            if done[index].1 { running.writes -= 1 } else { running.reads -= 1 }
            if connections[done[index].0] != nil { queue(done[index].0, done[index].2) }
            wipe(&done[index].2)
        }
        startWorkers()
    }

    private func reply(_ identifier: Int, _ reply: HolderReply) {
        guard var framed = HolderWire.framed(reply) else { return drop(identifier) }
        queue(identifier, framed)
        wipe(&framed)
    }

    private func queue(_ identifier: Int, _ framed: [UInt8]) {
        guard let connection = connections[identifier] else { return }
        connection.output += framed
        connection.underWay = nil
        connection.lastActive = bootSeconds()
        flush(identifier)
        take(identifier)
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
        pending -= connection.inputCount
        for index in connection.input.indices { wipe(&connection.input[index]) }
        wipe(&connection.output)
        close(connection.fd)
        connection.underWay?.cancel()
        waiting.removeAll { $0.0 == identifier }
    }
}
