internal import CLibSecret
import KeychainDBus
import KeychainStore
import KeychainSystem

/// The connection a Secret Service watch keeps, by SecretServiceDirect's rule: a wire connection of
/// its own (``BusWire``) when the session bus is a Unix socket that accepts us, else GIO's shared
/// connection, its subscriptions delivered on a context of their own (``GDBusSubscriptions``).
/// Either way the watcher subscribes, waits for signals and calls through ``ServiceBus``: its
/// logic is written once (SecretServiceSignalWatcher.swift). Used on the watcher's thread only.
final class WatchConnection {
    private enum Way {
        case wire(BusWire)
        case gdbus(OwnedObject, GDBusSubscriptions)
    }

    private let way: Way
    private let connection: SecretServiceConnection
    /// How long each step may wait for the service.
    private let seconds: Double

    private init(_ way: Way, _ connection: SecretServiceConnection, seconds: Double) {
        (self.way, self.connection, self.seconds) = (way, connection, seconds)
    }

    /// Connects and subscribes to `rules`; returns once the bus has them all.
    static func subscribing(
        to rules: [BusMatchRule], _ connection: SecretServiceConnection, seconds: Double
    ) throws -> WatchConnection {
        if let address = Environment.value("DBUS_SESSION_BUS_ADDRESS"),
            let endpoint = SessionBusSocket.Endpoint(address),
            let wire = BusWire(endpoint, operation: "connect", seconds: seconds)
        {
            do {
                try subscribe(to: rules, on: ServiceBus.wire(wire))
                return WatchConnection(.wire(wire), connection, seconds: seconds)
            } catch DBusError.refused {
                // A bus that refuses our authentication may let GIO's in.
            } catch let error as DBusError {
                throw KeychainError(error)
            }
        }
        let bus = try BoundedOperation.run("connect", seconds: seconds) { try connection.sharedSessionBus($0) }
        let watching = WatchConnection(.gdbus(bus, GDBusSubscriptions(bus.opaque)), connection, seconds: seconds)
        try watching.withClient("connect") { try subscribe(to: rules, on: $0.bus) }
        return watching
    }

    /// Subscribes to each of `rules` on `bus`, either way.
    private static func subscribe(to rules: [BusMatchRule], on bus: some BusConnection) throws {
        for rule in rules { try bus.subscribe(rule) }
    }

    /// The signals received, as ``BusConnection/signals(until:waking:)``.
    func signals(until deadline: Double, waking wake: Int32) throws -> [BusSignal] {
        try withClient("watch") { try $0.bus.signals(until: deadline, waking: wake) }
    }

    /// Whether the connection closed: nothing more comes on it.
    var isClosed: Bool {
        switch way {
        case .wire(let wire): wire.closed
        case .gdbus(let bus, _): g_dbus_connection_is_closed(bus.opaque) != 0
        }
    }

    /// Runs `body` with a client on this connection whose every wait lasts at most ``seconds``;
    /// `what` completes its time-outs' "timed out waiting for … to …". Its errors are
    /// KeychainErrors.
    func withClient<T>(_ what: String, _ body: (SecretServiceClient) throws -> T) throws -> T {
        switch way {
        case .wire(let wire):
            (wire.operation, wire.seconds) = (what, seconds)
            do {
                return try body(SecretServiceClient(connection, wire: wire))
            } catch let error as DBusError {
                throw KeychainError(error)
            }
        case .gdbus(let bus, let subscriptions):
            return try BoundedOperation.run(what, seconds: seconds) { operation in
                try body(SecretServiceClient(connection, operation, bus.opaque, subscriptions: subscriptions))
            }
        }
    }
}
