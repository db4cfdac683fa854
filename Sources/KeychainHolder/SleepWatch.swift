import CLibSecret
import Dispatch
import KeychainGLib
import KeychainSystem

/// The machine going to sleep, as logind announces it on the system bus (`PrepareForSleep(true)`
/// of `org.freedesktop.login1.Manager`, sent by logind's own name only): the holder forgets its
/// vaults then, so that a laptop left suspended holds none.
package enum SleepWatch {
    /// Watches on a thread of its own for as long as the process runs, calling `sleeping` at each
    /// announcement; returns once the bus has the subscription (a round trip after it), or at
    /// most `seconds` later. Where there is no system bus (no logind: a container, a CI runner)
    /// nothing is watched.
    package static func start(waiting seconds: Double, _ sleeping: @escaping @Sendable () -> Void) {
        let address = Environment.value("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket"
        let subscribed = DispatchSemaphore(value: 0)
        let started = startThread {
            defer { subscribed.signal() }
            withThreadDefaultContext { context in
                let flags = GDBusConnectionFlags(
                    rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                        | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
                let (connected, _) = catchingError {
                    g_dbus_connection_new_for_address_sync(address, flags, nil, nil, $0)
                }
                guard let connected else { return }
                let bus = OwnedObject(taking: UnsafeMutableRawPointer(connected))
                g_dbus_connection_set_exit_on_close(bus.opaque, 0)
                let callback = Unmanaged.passRetained(Callback(sleeping))
                defer { callback.release() }
                g_dbus_connection_signal_subscribe(
                    bus.opaque, "org.freedesktop.login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                    "/org/freedesktop/login1", nil, G_DBUS_SIGNAL_FLAGS_NONE,
                    { _, _, _, _, _, parameters, data in
                        guard let parameters else { return }
                        let arguments = OwnedVariant(taking: g_variant_ref(parameters))
                        guard arguments.typeString == "(b)", arguments.child(0).boolean else { return }
                        Unmanaged<Callback>.fromOpaque(data!).takeUnretainedValue().body()
                    }, callback.toOpaque(), nil)
                // The bus handles a connection's messages in order: once it answers this, it
                // has the match rule the subscription sent before.
                _ = OwnedVariant(
                    takingIfAny: g_dbus_connection_call_sync(
                        bus.opaque, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer",
                        "Ping",
                        nil, nil, G_DBUS_CALL_FLAGS_NONE, Int32(seconds * 1000), nil, nil))
                subscribed.signal()
                while g_dbus_connection_is_closed(bus.opaque) == 0 { g_main_context_iteration(context, 1) }
            }
        }
        if started { _ = subscribed.wait(timeout: .now() + seconds) }
    }

    private final class Callback: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
}
