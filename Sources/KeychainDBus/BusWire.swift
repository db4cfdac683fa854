import Glibc
import KeychainSystem

/// A session bus connection spoken directly, without GLib: the Secret Service client's way to a
/// Unix socket (SecretServiceDirect.swift). It connects through ``SessionBusSocket`` and sends the
/// authentication, `BEGIN`, `Hello` and the first requests in one write, before the bus has
/// answered (the D-Bus specification lets a client pipeline after `BEGIN`; dbus-daemon and
/// dbus-broker read it so); the bus's `OK` line is read with the first reply. Replies are matched
/// to calls by serial; signals (the bus's `NameAcquired`) are skipped. Every wait is bounded:
/// `seconds` since the last message received.
///
/// Not thread-safe: its owner holds it under a lock.
package final class BusWire {
    private let fd: Int32
    private var received: [UInt8] = []
    private var lastSerial: UInt32 = 0
    private var authenticated = false
    /// Replies read while waiting for another.
    private var pending: [UInt32: BusMessage.Received] = [:]
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

    /// Connects to `endpoint` and queues the authentication and `Hello`; nil when it cannot connect.
    package init?(_ endpoint: SessionBusSocket.Endpoint, operation: String, seconds: Double) {
        guard let fd = SessionBusSocket.connect(endpoint) else { return nil }
        (self.fd, self.endpoint, self.operation, self.seconds) = (fd, endpoint, operation, seconds)
        // org.freedesktop.DBus.Hello() -> (s unique name): the bus takes no other message first.
        let hello = BusMessage.call(
            serial: nextSerial(), destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "Hello")
        queued = SessionBusSocket.authentication + hello
    }

    deinit { close(fd) }

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

    /// The reply (or error) to the call `serial`, waiting for it.
    /// - Throws: ``DBusError/refused`` when the bus did not accept the authentication (the caller takes
    ///   another way), the wire's time-out when nothing arrives within `seconds`.
    package func reply(to serial: UInt32) throws(DBusError) -> BusMessage.Received {
        // `seconds` from the last whole message: a bus that trickles a message byte by byte does
        // not hold the caller past it.
        var deadline = monotonicSeconds() + seconds
        while true {
            if let reply = pending.removeValue(forKey: serial) { return reply }
            if !authenticated {
                guard let end = received.firstIndex(of: UInt8(ascii: "\n")) else {
                    // The answer is one short line (OK and a GUID); a bus that sends more is not one.
                    guard received.count < 512 else {
                        closed = true
                        throw .refused
                    }
                    try receive(until: deadline)
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
                authenticated = true
            }
            let message: BusMessage.Received
            do throws(DBusError) {
                guard let length = try BusMessage.length(received[...]), received.count >= length else {
                    try receive(until: deadline)
                    continue
                }
                message = try BusMessage.parse(received[..<length])
                received.removeSubrange(..<length)
                deadline = monotonicSeconds() + seconds
            } catch {
                closed = true  // a stream out of step: nothing after this can be read
                throw error
            }
            if let answered = message.replySerial, message.kind == .methodReturn || message.kind == .error {
                pending[answered] = message
            }
        }
    }

    private func send(_ bytes: [UInt8]) throws(DBusError) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                sent += count
            } else if count < 0 && (errno == EAGAIN || errno == EINTR) {
                do throws(DBusError) {
                    try wait(for: Int16(POLLOUT), until: monotonicSeconds() + seconds)
                } catch {
                    closed = true  // a message cut short: nothing more may follow it
                    throw error
                }
            } else {
                throw broken()
            }
        }
    }

    private func receive(until deadline: Double) throws(DBusError) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                received += buffer[..<count]
                return
            }
            guard count < 0 && (errno == EAGAIN || errno == EINTR) else { throw broken() }
            try wait(for: Int16(POLLIN), until: deadline)
        }
    }

    /// Waits until the socket is ready for `events`, at most until `deadline` (monotonic seconds).
    private func wait(for events: Int16, until deadline: Double) throws(DBusError) {
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { throw .timedOut(operation: operation, seconds: seconds) }
            var ready = pollfd(fd: fd, events: events, revents: 0)
            let polled = poll(&ready, 1, Int32(min(remaining * 1000 + 1, Double(Int32.max))))
            if polled > 0 || (polled < 0 && errno != EINTR) { return }
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
