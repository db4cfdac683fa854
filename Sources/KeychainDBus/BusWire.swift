import Glibc
import KeychainSystem

/// A session bus connection spoken directly, without GLib: the Secret Service client's way to a
/// Unix socket (SecretServiceDirect.swift). It connects through ``SessionBusSocket`` and sends the
/// authentication, `BEGIN`, `Hello` and the first requests in one write, before the bus has
/// answered (the D-Bus specification lets a client pipeline after `BEGIN`; dbus-daemon and
/// dbus-broker read it so); the bus's `OK` line is read with the first reply. Replies are matched
/// to calls by serial; the signals a subscription asks for (``subscribe(_:)``) are kept, between
/// replies too, until ``signals(until:waking:)`` hands them out; other messages (the bus's
/// `NameAcquired`) are skipped. Every wait for a reply is bounded: `seconds` since the last
/// message received.
///
/// Not thread-safe: its owner holds it under a lock.
package final class BusWire {
    private let fd: Int32
    private var received: [UInt8] = []
    private var lastSerial: UInt32 = 0
    private var authenticated = false
    /// Replies read while waiting for another.
    private var pending: [UInt32: BusMessage.Received] = [:]
    /// The subscriptions' rules, and the signals received that they ask for, not handed out yet.
    private var rules: [BusMatchRule] = []
    private var signalsReceived: [BusSignal] = []
    /// Whether it asks for Unix descriptors, whether the bus agreed, and those received that no
    /// message has taken yet.
    private let takesDescriptors: Bool
    package private(set) var descriptorsAgreed = false
    private var descriptorsReceived: [Int32] = []
    /// Bytes not yet sent: the authentication and Hello go out with the first call.
    private var queued: [UInt8] = []
    /// The bus's connection broke or refused us: no further call on it.
    package private(set) var closed = false
    /// Where the bus is, and the GUID its `OK` must carry.
    private let endpoint: SessionBusSocket.Endpoint
    /// What the caller is doing, for errors, and how long it waits for each message (set by each
    /// caller that takes up a kept connection).
    package var operation: String
    package var seconds: Double

    /// The socket, for a caller that waits on it with its own poll (the holder's sleep watch).
    package var descriptor: Int32 { fd }

    /// Connects to `endpoint` and queues the authentication and `Hello`; nil when it cannot connect.
    /// `descriptors`: it asks for Unix descriptors (``BusMessage/Received/descriptors``).
    package init?(_ endpoint: SessionBusSocket.Endpoint, operation: String, seconds: Double, descriptors: Bool = false)
    {
        guard let fd = SessionBusSocket.connect(endpoint) else { return nil }
        (self.fd, self.endpoint, self.operation, self.seconds) = (fd, endpoint, operation, seconds)
        takesDescriptors = descriptors
        // org.freedesktop.DBus.Hello() -> (s unique name): the bus takes no other message first.
        let hello = BusMessage.call(
            serial: nextSerial(), destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "Hello")
        queued = SessionBusSocket.authentication(descriptors: descriptors) + hello
    }

    deinit {
        close(fd)
        BusDescriptors.close(descriptorsReceived + pending.values.flatMap(\.descriptors))
    }

    private func nextSerial() -> UInt32 {
        lastSerial += 1
        return lastSerial
    }

    /// Sends a method call (with what is queued before it) and returns its serial, for ``reply(to:)``.
    package func call(
        _ destination: String, _ path: String, _ interface: String, _ member: String, signature: String = "",
        body: (inout BusWriter) -> Void = { _ in }
    ) throws(DBusError) -> UInt32 {
        let serial = nextSerial()
        let message = BusMessage.call(
            serial: serial, destination: destination, path: path, interface: interface, member: member,
            signature: signature, body: body)
        try send(queued + message)
        queued = []
        return serial
    }

    /// Queues a signal (a message with no destination) to go out with the next call.
    package func signal(_ path: String, _ interface: String, _ member: String) {
        queued += BusMessage.call(
            serial: nextSerial(), destination: nil, path: path, interface: interface, member: member)
    }

    /// The reply (or error) to the call `serial`, waiting for it. Signals that arrive before it
    /// are kept for ``signals(until:waking:)`` when a subscription asks for them.
    /// - Throws: ``DBusError/refused`` when the bus did not accept the authentication (the caller takes
    ///   another way), the wire's time-out when nothing arrives within `seconds`.
    package func reply(to serial: UInt32) throws(DBusError) -> BusMessage.Received {
        // `seconds` from the last whole message: a bus that trickles a message byte by byte does
        // not hold the caller past it.
        var deadline = monotonicSeconds() + seconds
        while true {
            if let reply = pending.removeValue(forKey: serial) { return reply }
            guard let message = try nextMessage(until: deadline, waking: nil) else {
                throw .timedOut(operation: operation, seconds: seconds)
            }
            deadline = monotonicSeconds() + seconds
            keep(message)
        }
    }

    /// The reply to the call `serial` if it has been read (by ``signals(until:waking:)`` or
    /// while waiting for another reply), without waiting; nil while it has not come.
    package func takeReply(to serial: UInt32) -> BusMessage.Received? { pending.removeValue(forKey: serial) }

    /// Asks the bus for the signals `rule` matches (`AddMatch`), and returns once the bus answered:
    /// it has the rule then, and routes every matching signal sent after to us.
    package func subscribe(_ rule: BusMatchRule) throws(DBusError) {
        let reply = try reply(to: beginSubscription(rule))
        if let name = reply.errorName { throw .failed("the bus refused the match rule \(rule.text): \(name)") }
    }

    /// Sends `AddMatch` for `rule` without waiting (its serial returned): the signals it matches
    /// are handed out from now on, and the bus routes them once it has handled it (before any
    /// call sent after it).
    package func beginSubscription(_ rule: BusMatchRule) throws(DBusError) -> UInt32 {
        // org.freedesktop.DBus.AddMatch(s rule) -> ()
        let serial = try call(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch", signature: "s"
        ) { $0.string(rule.text) }
        rules.append(rule)
        return serial
    }

    /// The signals received that a subscription asks for, in the order they came: those kept
    /// while waiting for replies, else the first to arrive before `deadline` (monotonic seconds)
    /// with those that came with it; none when the deadline passes or `wake` (a descriptor, or
    /// -1) becomes readable first.
    /// - Throws: ``DBusError/closed`` when the bus hung up.
    package func signals(until deadline: Double, waking wake: Int32) throws(DBusError) -> [BusSignal] {
        if !queued.isEmpty {
            try send(queued)
            queued = []
        }
        // Once one is there, only what has already arrived is read.
        while let message = try nextMessage(until: signalsReceived.isEmpty ? deadline : 0, waking: wake) {
            keep(message)
        }
        defer { signalsReceived = [] }
        return signalsReceived
    }

    /// Files a message read: a reply for the call it answers, a signal a subscription asks for
    /// in the signals received; anything else (a call to us, the bus's `NameAcquired`) is dropped.
    private func keep(_ message: BusMessage.Received) {
        if message.kind != .methodReturn && message.kind != .error || message.replySerial == nil {
            BusDescriptors.close(message.descriptors)  // only a reply's are handed out
        }
        switch message.kind {
        case .methodReturn?, .error?:
            if let answered = message.replySerial { pending[answered] = message }
        case .signal?:
            var body = message.body
            guard !rules.isEmpty, let arguments = try? body.values(message.signature) else { return }
            let signal = BusSignal(
                sender: message.sender, path: message.path, interface: message.interface, member: message.member,
                arguments: arguments)
            let unicast = !message.destination.isEmpty
            if rules.contains(where: { $0.matches(signal, unicast: unicast) }) { signalsReceived.append(signal) }
        default: return
        }
    }

    /// The next whole message, the bus's authentication answer read first; nil when `deadline`
    /// passes or `wake` becomes readable before it is whole.
    private func nextMessage(until deadline: Double, waking wake: Int32?) throws(DBusError) -> BusMessage.Received? {
        while true {
            if !authenticated {
                guard let end = received.firstIndex(of: UInt8(ascii: "\n")) else {
                    // The answer is one short line (OK and a GUID); a bus that sends more is not one.
                    guard received.count < 512 else {
                        closed = true
                        throw .refused
                    }
                    guard try receive(until: deadline, waking: wake) else { return nil }
                    continue
                }
                let line = received[..<end]
                guard line.last == UInt8(ascii: "\r"),
                    endpoint.accepts(String(decoding: line.dropLast(), as: UTF8.self))
                else {
                    closed = true
                    throw .refused
                }
                received.removeSubrange(...end)
                guard try agreement(until: deadline, waking: wake) else { return nil }
                authenticated = true
            }
            do throws(DBusError) {
                guard let length = try BusMessage.length(received[...]), received.count >= length else {
                    guard try receive(until: deadline, waking: wake) else { return nil }
                    continue
                }
                var message = try BusMessage.parse(received[..<length])
                received.removeSubrange(..<length)
                guard message.descriptorCount <= descriptorsReceived.count else { throw .malformed }
                message.descriptors = Array(descriptorsReceived.prefix(message.descriptorCount))
                descriptorsReceived.removeFirst(message.descriptorCount)
                return message
            } catch {
                closed = true  // a stream out of step: nothing after this can be read
                throw error
            }
        }
    }

    private func send(_ bytes: [UInt8]) throws(DBusError) {
        switch sendAll(fd, bytes, until: { monotonicSeconds() + seconds }) {
        case .sent: return
        case .timedOut:
            closed = true  // a message cut short: nothing more may follow it
            throw .timedOut(operation: operation, seconds: seconds)
        case .failed: throw broken()
        }
    }

    /// The bus's answer to NEGOTIATE_UNIX_FD, when it was asked, on the line after its OK (the OK
    /// line already taken): true once it is read, false when `deadline` passes or `wake` wakes first.
    private func agreement(until deadline: Double, waking wake: Int32?) throws(DBusError) -> Bool {
        guard takesDescriptors && !descriptorsAgreed else { return true }
        while true {
            if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                descriptorsAgreed = received[..<end].starts(with: Array("AGREE_UNIX_FD".utf8))
                received.removeSubrange(...end)
                return true
            }
            guard received.count < 512 else {
                closed = true
                throw .refused
            }
            guard try receive(until: deadline, waking: wake) else { return false }
        }
    }

    /// Reads what has arrived, waiting for it until `deadline`; false when the deadline passed or
    /// `wake` became readable first.
    private func receive(until deadline: Double, waking wake: Int32?) throws(DBusError) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count =
                takesDescriptors
                ? BusDescriptors.receive(fd, into: &buffer, &descriptorsReceived) : recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                received += buffer[..<count]
                return true
            }
            guard count < 0 && (errno == EAGAIN || errno == EINTR) else { throw broken() }
            guard wait(for: Int16(POLLIN), until: deadline, waking: wake ?? -1) else { return false }
        }
    }

    /// Waits until the socket is ready for `events`, at most until `deadline` (monotonic
    /// seconds); false when the deadline passed or `wake` became readable first.
    private func wait(for events: Int16, until deadline: Double, waking wake: Int32 = -1) -> Bool {
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { return false }
            // A negative descriptor is ignored by poll.
            var ready = [
                pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            let polled = poll(&ready, 2, Int32(min(remaining * 1000 + 1, Double(Int32.max))))
            if polled > 0 { return ready[1].revents == 0 }
            if polled < 0 && errno != EINTR { return true }  // the read that follows says what broke
        }
    }

    /// The connection broke or the bus hung up, before its `OK` too: a bus that accepts a
    /// connection and closes it unanswered is not one GIO could use either (a bus that refuses
    /// our authentication says so: ``DBusError/refused``, and GIO tries its own).
    private func broken() -> DBusError {
        closed = true
        return .closed
    }
}
