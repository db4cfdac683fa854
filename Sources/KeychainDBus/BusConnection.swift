internal import CLibSecret

/// What a peer answered a method call: its values, or the D-Bus error it sent (its name, and
/// its message when it gave one).
package enum BusAnswer: Equatable, Sendable {
    case values([BusValue])
    case error(name: String, message: String)
}

/// A connection that method calls go out on, whichever way it reaches the bus: our own wire
/// (``BusWire``) or GDBus (``GDBusCalls``). A call is sent without waiting: the peer answers in
/// order, so several calls can be on their way at once (the pipelining that makes a `get` one
/// round trip); ``answer(_:)`` then waits for one. A client written on this protocol is written
/// once for both.
package protocol BusConnection {
    associatedtype Call
    /// What the calls are for (completing "timed out waiting for … to …"), and how long each may
    /// wait: the words of a time-out the peer's bus reports.
    var operation: String { get }
    var seconds: Double { get }
    /// Sends a method call, and returns at once.
    func send(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue])
        throws -> Call
    /// The answer to `call`, waiting for it. A connection that fails, or a wait that runs out,
    /// throws; an error the peer answered is a value.
    func answer(_ call: Call) throws -> BusAnswer
    /// Sends a signal with no arguments, broadcast on `path`: it goes out after every call sent
    /// before it and before every call sent after it (on our wire, with the next call).
    func emit(_ path: String, _ interface: String, _ member: String)
    /// Asks the bus for the signals `rule` matches, and returns once the bus has the rule (a round
    /// trip after it): every matching signal sent after is received.
    func subscribe(_ rule: BusMatchRule) throws
    /// The signals received that a subscription asks for, in order: those already there, else
    /// the first to come before `deadline` (``monotonicSeconds()``) and those with it; none when
    /// the deadline passes or `wake` (a descriptor, -1 for none) becomes readable first. The
    /// caller waits on events this way, not on a tick. Throws ``DBusError/closed`` once the
    /// connection is closed.
    func signals(until deadline: Double, waking wake: Int32) throws -> [BusSignal]
}

extension BusWire: BusConnection {
    package func send(
        _ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue]
    ) throws(DBusError) -> UInt32 {
        try call(destination, path, interface, member, signature: arguments.map(\.signature).joined()) { body in
            for argument in arguments { body.value(argument) }
        }
    }

    package func answer(_ call: UInt32) throws(DBusError) -> BusAnswer {
        let reply = try reply(to: call)
        BusDescriptors.close(reply.descriptors)  // an `h` is read as `.other` here
        var body = reply.body
        if let name = reply.errorName {
            let message = reply.signature.hasPrefix("s") ? (try? body.string()) ?? "" : ""
            return .error(name: name, message: message)
        }
        guard reply.kind == .methodReturn else { throw .malformed }
        return .values(try body.values(reply.signature))
    }

    package func emit(_ path: String, _ interface: String, _ member: String) { signal(path, interface, member) }
}

/// Method calls on a GDBus connection, within a bounded operation: each call is started on the
/// operation's context and finished when answered.
package struct GDBusCalls: BusConnection {
    package let bounded: BoundedOperation
    package let bus: OpaquePointer
    /// Where this connection's signal subscriptions are delivered, kept beyond one operation:
    /// nil for a connection that only makes calls.
    package let subscriptions: GDBusSubscriptions?

    package init(_ operation: BoundedOperation, _ bus: OpaquePointer, subscriptions: GDBusSubscriptions? = nil) {
        (bounded, self.bus, self.subscriptions) = (operation, bus, subscriptions)
    }

    package var operation: String { bounded.what }
    package var seconds: Double { bounded.seconds }

    package func send(
        _ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue]
    ) -> BoundedOperation.PendingCall {
        let parameters = BusValue.structure(arguments).variant
        return bounded.begin { cancellable, callback, data in
            parameters.use {
                g_dbus_connection_call(
                    bus, destination, path, interface, member, $0, nil, G_DBUS_CALL_FLAGS_NONE, -1, cancellable,
                    callback, data)
            }
        }
    }

    package func answer(_ call: BoundedOperation.PendingCall) throws -> BusAnswer {
        let answer = try bounded.end(call) { result, error -> BusAnswer? in
            if let reply = g_dbus_connection_call_finish(bus, result, error) {
                let values = OwnedVariant(taking: reply).children.map(BusValue.init)
                return values.contains(nil) ? nil : .values(values.compactMap(\.self))
            }
            // An error the peer sent is an answer; one of the connection's own is thrown.
            guard let failure = error.pointee, let name = remoteErrorName(failure) else { return nil }
            let message = GLibError(failure).message
            _ = takeError(error)
            return .error(name: name, message: Self.strippingRemotePrefix(message))
        }
        guard let answer else { throw DBusError.failed("a reply of a type this client does not read") }
        return answer
    }

    package func emit(_ path: String, _ interface: String, _ member: String) {
        g_dbus_connection_emit_signal(bus, nil, path, interface, member, nil, nil)
    }

    /// Subscribes on ``subscriptions``, then waits for a `Peer.Ping` to the bus: GDBus sends the
    /// rule's `AddMatch` without waiting, and the bus handles a connection's messages in order.
    package func subscribe(_ rule: BusMatchRule) throws {
        guard let subscriptions else { throw DBusError.failed("this connection takes no subscriptions") }
        subscriptions.subscribe(rule)
        // org.freedesktop.DBus.Peer.Ping() -> ()
        let ping = send("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping", [])
        guard case .values = try answer(ping) else { throw DBusError.failed("the bus did not answer Ping") }
    }

    package func signals(until deadline: Double, waking wake: Int32) throws -> [BusSignal] {
        guard let subscriptions else { throw DBusError.failed("this connection takes no subscriptions") }
        return try subscriptions.signals(until: deadline, waking: wake)
    }

    /// Runs `body` with calls on a new GDBus connection to the message bus at `address`, closed
    /// when it returns, within a bounded operation (``BoundedOperation/run(_:seconds:meaning:_:)``).
    /// For a caller with no connection of its own: the tests' scripted Secret Service on a
    /// private bus (a test target cannot use BoundedOperation itself: its Foundation's ICU and
    /// the system's, which libxml2 includes, clash in the code generated for it).
    package static func onBus<T, Failure: Error>(
        at address: String, _ what: String, seconds: Double, meaning: @escaping (DBusError) -> Failure,
        _ body: (GDBusCalls) throws -> T
    ) throws(Failure) -> T {
        try BoundedOperation.run(what, seconds: seconds, meaning: meaning) { operation in
            let flags = GDBusConnectionFlags(
                rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                    | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
            let (connected, error) = catchingError {
                g_dbus_connection_new_for_address_sync(address, flags, nil, nil, $0)
            }
            guard let connected else { throw DBusError.failed("cannot connect to \(address): \(error?.message ?? "")") }
            let bus = OwnedObject(taking: UnsafeMutableRawPointer(connected))
            g_dbus_connection_set_exit_on_close(connected, 0)
            defer { g_dbus_connection_close_sync(connected, nil, nil) }
            let subscriptions = GDBusSubscriptions(connected)
            return try withExtendedLifetime(bus) {
                try body(GDBusCalls(operation, connected, subscriptions: subscriptions))
            }
        }
    }

    /// GDBus puts "GDBus.Error:NAME: " before a remote error's message; the peer's words follow.
    package static func strippingRemotePrefix(_ message: String) -> String {
        guard message.hasPrefix("GDBus.Error:"), let colon = message.dropFirst(12).firstIndex(of: ":") else {
            return message
        }
        return String(message[message.index(after: colon)...].drop(while: { $0 == " " }))
    }
}
