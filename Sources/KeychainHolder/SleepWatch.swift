import CLibSecret
import Dispatch
import Glibc
import KeychainDBus
import KeychainSystem

/// The machine going to sleep, as logind announces it on the system bus (`PrepareForSleep(true)`
/// of `org.freedesktop.login1.Manager`, sent by logind's own name only): the holder forgets its
/// vaults then, so that a laptop left suspended holds none. While awake it holds a delay
/// inhibitor of logind's (`Inhibit("sleep", …, "delay")`), which it closes once it has forgotten
/// them: logind does not suspend before (up to its InhibitDelayMaxSec, 5 s by default). It takes
/// another at the resume.
package enum SleepWatch {
    /// Seconds between two tries to reach the system bus: at the start where none answers, and
    /// after it closed the connection (the bus restarted): suspends lock again once it is back.
    static let retrySeconds: UInt32 = 2

    /// Watches on a thread of its own for as long as the process runs, calling `sleeping` at each
    /// announcement; returns once the bus has the subscription (a round trip after it), or at
    /// most `seconds` later. Where there is no system bus (no logind: a container, a CI runner)
    /// it tries again every ``retrySeconds``.
    package static func start(waiting seconds: Double, _ sleeping: @escaping @Sendable () -> Void) {
        let address = Environment.value("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket"
        let subscribed = DispatchSemaphore(value: 0)
        let started = startThread {
            while true {
                watch(address, seconds: seconds, sleeping: sleeping) { subscribed.signal() }
                subscribed.signal()
                sleep(retrySeconds)
            }
        }
        if started == nil { _ = subscribed.wait(timeout: .now() + seconds) }
    }

    /// Watches on one connection to the bus at `address` until it closes; returns at once when
    /// there is none. `ready` is called once the subscription is in place.
    private static func watch(
        _ address: String, seconds: Double, sleeping: @escaping @Sendable () -> Void, ready: () -> Void
    ) {
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
            let watcher = Unmanaged.passRetained(Watcher(bus: bus, sleeping: sleeping, timeout: Int32(seconds * 1000)))
            defer { watcher.release() }
            let subscription = g_dbus_connection_signal_subscribe(
                bus.opaque, "org.freedesktop.login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
                "/org/freedesktop/login1", nil, G_DBUS_SIGNAL_FLAGS_NONE,
                { _, _, _, _, _, parameters, data in
                    guard let parameters else { return }
                    let arguments = OwnedVariant(taking: g_variant_ref(parameters))
                    guard arguments.typeString == "(b)" else { return }
                    Unmanaged<Watcher>.fromOpaque(data!).takeUnretainedValue().prepare(
                        sleep: arguments.child(0).boolean)
                }, watcher.toOpaque(), nil)
            defer { g_dbus_connection_signal_unsubscribe(bus.opaque, subscription) }
            // The bus handles a connection's messages in order: once it answers this, it has the
            // match rule the subscription sent before.
            _ = OwnedVariant(
                takingIfAny: g_dbus_connection_call_sync(
                    bus.opaque, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping",
                    nil, nil, G_DBUS_CALL_FLAGS_NONE, Int32(seconds * 1000), nil, nil))
            watcher.takeUnretainedValue().inhibit()
            ready()
            while g_dbus_connection_is_closed(bus.opaque) == 0 { g_main_context_iteration(context, 1) }
        }
    }

    /// What one connection's subscription calls, on its thread only.
    private final class Watcher: @unchecked Sendable {
        let bus: OwnedObject
        let sleeping: @Sendable () -> Void
        let timeout: Int32
        /// The delay inhibitor's descriptor, -1 while none is held.
        var inhibitor: Int32 = -1

        init(bus: OwnedObject, sleeping: @escaping @Sendable () -> Void, timeout: Int32) {
            (self.bus, self.sleeping, self.timeout) = (bus, sleeping, timeout)
        }

        deinit { release() }

        func inhibit() {
            guard inhibitor < 0 else { return }
            inhibitor = bus.use { bus in
                keychain_cli_inhibit_sleep(
                    bus, "keychain-cli", "Forget the vaults keychain-cli unlock holds open", timeout)
            }
        }

        func release() {
            if inhibitor >= 0 { close(inhibitor) }
            inhibitor = -1
        }

        /// PrepareForSleep(`sleep`): going to sleep, forget then let it; waking, delay the next.
        func prepare(sleep: Bool) {
            if sleep {
                sleeping()
                release()
            } else {
                inhibit()
            }
        }
    }
}
