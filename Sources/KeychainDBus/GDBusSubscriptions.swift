internal import CLibSecret
import Glibc
import KeychainSystem

/// Signal subscriptions on a GDBus connection, the GDBus side of ``BusConnection/subscribe(_:)``:
/// GDBus delivers a subscription's signals on the main context that was the thread's default
/// when it subscribed, so they have a context of their own here, which outlives the bounded
/// operations that make calls meanwhile, and which ``signals(until:waking:)`` iterates. Ends its
/// subscriptions when dropped. Not thread-safe: one lives on one thread.
package final class GDBusSubscriptions {
    private let bus: OwnedObject
    private let context: OpaquePointer
    private var subscriptions: [guint] = []
    /// Signals delivered, not handed out yet.
    private var received: [BusSignal] = []
    /// Our own descriptor for the bus's socket, polled for its hang-up only (-1: none).
    private let socket: Int32

    package init(_ bus: OpaquePointer) {
        self.bus = OwnedObject(adding: UnsafeMutableRawPointer(bus))
        context = g_main_context_new()
        socket = keychain_cli_bus_socket_duplicate(bus)
    }

    deinit {
        for subscription in subscriptions { g_dbus_connection_signal_unsubscribe(bus.opaque, subscription) }
        // What GDBus had queued for them is dispatched (to nothing) and freed with the context.
        while g_main_context_iteration(context, 0) != 0 {}
        g_main_context_unref(context)
        if socket >= 0 { close(socket) }
    }

    /// Subscribes to `rule` on this object's context. GDBus sends the bus the `AddMatch` without
    /// waiting for its answer (``GDBusCalls/subscribe(_:)`` waits for the round trip).
    func subscribe(_ rule: BusMatchRule) {
        g_main_context_push_thread_default(context)
        defer { g_main_context_pop_thread_default(context) }
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                bus.opaque, rule.sender, rule.interface, rule.member, rule.path, rule.arg0, G_DBUS_SIGNAL_FLAGS_NONE,
                { _, sender, path, interface, member, parameters, data in
                    let subscriptions = Unmanaged<GDBusSubscriptions>.fromOpaque(data!).takeUnretainedValue()
                    guard let sender, let path, let interface, let member, let parameters else { return }
                    let arguments = OwnedVariant(taking: g_variant_ref(parameters)).children.map(BusValue.init)
                    guard !arguments.contains(nil) else { return }  // a type this client does not read
                    subscriptions.received.append(
                        BusSignal(
                            sender: String(cString: sender), path: String(cString: path),
                            interface: String(cString: interface), member: String(cString: member),
                            arguments: arguments.compactMap(\.self)))
                }, Unmanaged.passUnretained(self).toOpaque(), nil))
    }

    /// As ``BusConnection/signals(until:waking:)``: iterates the context until a signal is
    /// delivered, `deadline` passes (a timeout source), `wake` is readable or the bus's socket
    /// hangs up (descriptor sources).
    func signals(until deadline: Double, waking wake: Int32) throws(DBusError) -> [BusSignal] {
        // Made once per wait: a source attached or removed wakes the context, so sources made
        // anew on every turn would wake each next iteration at once, and the wait would spin.
        let remaining = deadline - monotonicSeconds()
        let timer = WakeUpSource(milliseconds: UInt32(max(1, min((remaining * 1000).rounded(.up), 4e9))), on: context)
        let waker = wake >= 0 ? DescriptorSource(wake, on: context) : nil
        let hangup = socket >= 0 ? DescriptorSource(socket, G_IO_HUP, on: context) : nil
        defer { withExtendedLifetime((timer, waker, hangup)) {} }
        while true {
            while g_main_context_iteration(context, 0) != 0 {}
            if !received.isEmpty {
                defer { received = [] }
                return received
            }
            var hungUp = pollfd(fd: socket, events: 0, revents: 0)  // a hang-up is always reported
            if poll(&hungUp, 1, 0) > 0 || g_dbus_connection_is_closed(bus.opaque) != 0 { throw .closed }
            var woken = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
            guard deadline > monotonicSeconds(), poll(&woken, 1, 0) <= 0 else { return [] }
            g_main_context_iteration(context, 1)
        }
    }
}

/// A source on a context that wakes it once when a descriptor is ready for `condition` (a
/// descriptor that stays ready would make every iteration dispatch it), dropped with this object.
private final class DescriptorSource {
    private let source: UnsafeMutablePointer<GSource>

    init(_ fd: Int32, _ condition: GIOCondition = G_IO_IN, on context: OpaquePointer) {
        source = g_unix_fd_source_new(fd, condition)!
        let ready: @convention(c) (Int32, GIOCondition, gpointer?) -> gboolean = { _, _, _ in 0 }  // G_SOURCE_REMOVE
        g_source_set_callback(source, unsafeBitCast(ready, to: GSourceFunc.self), nil, nil)
        g_source_attach(source, context)
    }

    deinit {
        g_source_destroy(source)
        g_source_unref(source)
    }
}
