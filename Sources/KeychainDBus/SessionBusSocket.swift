internal import CLibSecret
import Glibc
import KeychainSystem

/// The session bus connection for the Secret Service calls made without libsecret, opened the way
/// sd-bus opens one: the whole authentication in one write (`AUTH EXTERNAL` with our uid, then
/// `BEGIN`), one answer read, and `Hello` sent without waiting for its reply, so that the first
/// request follows it at once. GDBus's own connection (`g_bus_get`) asks `AUTH` with no mechanism
/// first, then sends `EXTERNAL`, `DATA` and `NEGOTIATE_UNIX_FD`, each waiting for its answer, and
/// waits for Hello's reply: five round trips to the bus before the first request (measured in C,
/// interleaved runs of a connect and one search: this way is the faster).
///
/// Only a Unix socket named in `$DBUS_SESSION_BUS_ADDRESS` by `path=` or `abstract=` is opened
/// here, and only a plain `OK` is taken; anything else (another transport, an unset variable,
/// a bus that refuses EXTERNAL) falls back to GIO's connection, which knows them all. The
/// connection is not a "message bus connection" to GDBus, which then sends no `AddMatch` for a
/// signal subscription: the watcher uses GIO's shared connection. Each store's connection
/// (``SecretServiceConnection``) owns one, which keeps the socket it opened while the address
/// stays the same; the socket closes when the store goes away (GDBus finalizes the connection
/// with its last reference; closing it first would leave its "closed" signal queued on a main
/// context nobody runs, which keeps both alive).
package final class SessionBusSocket: Sendable {
    /// The connection for `address`, or nil when that address goes to GIO's connection (not a
    /// socket opened here, or its bus refused us), so that later operations do not try again.
    private struct Kept: Sendable {
        let address: String
        let bus: OwnedObject?

        enum Lookup {
            /// The connection kept for the address.
            case open(OwnedObject)
            /// The address is known to go to GIO's connection.
            case toGIO
            /// Another address, or the kept connection was closed: open one.
            case unknown
        }

        func lookup(_ current: String) -> Lookup {
            guard address == current else { return .unknown }
            guard let bus else { return .toGIO }
            guard bus.use({ g_dbus_connection_is_closed($0) }) == 0 else { return .unknown }
            return .open(bus)
        }
    }
    private let kept = Locked<Kept?>(nil)

    package init() {}
    /// The address of the connection kept open (for tests).
    package var keptAddress: String? { kept.withLock { $0?.bus == nil ? nil : $0?.address } }

    /// The connection for the current `$DBUS_SESSION_BUS_ADDRESS` (opened on
    /// first use), or nil when that address is not one opened here. `meanwhile` runs once, while
    /// the bus answers the authentication (or at once for a kept connection).
    package func connection(_ operation: BoundedOperation, meanwhile: () -> Void) throws -> OwnedObject? {
        guard let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") else { return nil }
        switch kept.withLock({ $0?.lookup(address) ?? .unknown }) {
        case .open(let bus):
            meanwhile()
            return bus
        case .toGIO: return nil
        case .unknown: break
        }
        let bus = try Endpoint(address).flatMap { try Self.open($0, operation, meanwhile) }
        kept.withLock { $0 = Kept(address: address, bus: bus) }
        return bus
    }

    /// The first address of a D-Bus address list when it is a Unix socket by path or abstract
    /// name: the bytes of `sun_path` (an abstract name after a NUL) and the server's GUID if given.
    package struct Endpoint: Equatable {
        let socketPath: [UInt8]
        let guid: String?

        package init?(_ addresses: String) {
            guard let first = addresses.split(separator: ";", omittingEmptySubsequences: false).first,
                first.hasPrefix("unix:")
            else { return nil }
            var path: [UInt8]?
            var guid: String?
            for pair in first.dropFirst(5).split(separator: ",") {
                guard let equals = pair.firstIndex(of: "="),
                    let value = Self.unescaped(pair[pair.index(after: equals)...])
                else { return nil }
                switch pair[..<equals] {
                case "path" where path == nil && !value.isEmpty && !value.contains(0): path = value
                case "abstract" where path == nil && !value.contains(0): path = [0] + value
                case "guid" where guid == nil: guid = String(decoding: value, as: UTF8.self)
                default: return nil  // tmpdir, dir, runtime: for servers, or for GIO to resolve
                }
            }
            // sun_path holds 108 bytes, the terminating NUL of a path included.
            guard let path, path.count < 108 else { return nil }
            (socketPath, self.guid) = (path, guid)
        }

        /// Whether the bus's answer to our authentication (its line without CRLF) is OK, with the
        /// GUID the address names, if it names one.
        func accepts(_ answer: String) -> Bool {
            answer.hasPrefix("OK ") && guid.map { answer.dropFirst(3) == $0 } ?? true
        }

        /// The bytes of a D-Bus address value: `%XX` is the byte XX; nil for a malformed escape.
        private static func unescaped(_ value: Substring) -> [UInt8]? {
            var bytes: [UInt8] = []
            var rest = value.utf8[...]
            while let byte = rest.popFirst() {
                guard byte == UInt8(ascii: "%") else {
                    bytes.append(byte)
                    continue
                }
                guard rest.count >= 2, let decoded = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(decoded)
                rest = rest.dropFirst(2)
            }
            return bytes
        }
    }

    /// Connects and authenticates; nil when the bus cannot be reached this way.
    private static func open(_ endpoint: Endpoint, _ operation: BoundedOperation, _ meanwhile: () -> Void) throws
        -> OwnedObject?
    {
        guard let fd = connect(endpoint) else { return nil }
        var handedOver = false
        defer { if !handedOver { close(fd) } }
        let request = authentication
        guard send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else { return nil }
        meanwhile()
        guard let answer = try readLine(fd, operation), endpoint.accepts(answer) else { return nil }
        handedOver = true
        guard let bus = catchingError({ keychain_cli_connection_on_socket(fd, $0) }).value else { return nil }
        // org.freedesktop.DBus.Hello() -> (s unique name): the bus takes no other message first,
        // and answers it before the requests sent behind it; the reply is not needed.
        g_dbus_connection_call(
            bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", nil, nil,
            G_DBUS_CALL_FLAGS_NONE, -1, nil,
            { source, result, _ in
                _ = OwnedVariant(takingIfAny: g_dbus_connection_call_finish(OpaquePointer(source), result, nil))
            }, nil)
        return OwnedObject(taking: UnsafeMutableRawPointer(bus))
    }

    /// A socket connected to `endpoint`, non-blocking from the start, so that neither a full
    /// listen queue nor a silent bus can hold the caller past the operation's limit; nil when
    /// nothing listens there.
    package static func connect(_ endpoint: Endpoint) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard withUnixSocketAddress(endpoint.socketPath, { Glibc.connect(fd, $0, $1) }) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// The credentials byte, then EXTERNAL with our uid (its decimal digits, hex-encoded) and
    /// BEGIN behind it: the bus answers once, with OK and its GUID.
    package static var authentication: [UInt8] {
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()
        return [0] + Array("AUTH EXTERNAL \(uid)\r\nBEGIN\r\n".utf8)
    }

    /// The bus's one line of answer, without its CRLF; nil when the bus closes the connection or
    /// sends more than that line (nothing may follow before our first message).
    private static func readLine(_ fd: Int32, _ operation: BoundedOperation) throws -> String? {
        let (seconds, timedOut) = operation.limit
        let deadline = monotonicSeconds() + seconds
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while received.count < 512 {
            if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                guard end == received.count - 1, end > 0, received[end - 1] == UInt8(ascii: "\r") else { return nil }
                return String(decoding: received[..<(end - 1)], as: UTF8.self)
            }
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else { throw timedOut }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let polled = poll(&ready, 1, Int32(min(remaining * 1000 + 1, Double(Int32.max))))
            if polled < 0 && errno == EINTR { continue }
            guard polled >= 0 else { return nil }
            if polled == 0 { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            guard count > 0 else { return nil }
            received += buffer[..<count]
        }
        return nil
    }
}
