internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore

// How the Secret Service is watched: its collections' signals, and a light poll of the items'
// `Modified` property for the writes that send none.
extension SecretServiceStore {
    /// The signal keychain-cli sends on the session bus after it changed an item's secret with
    /// `SetSecret`, for which gnome-keyring signals nothing: (interface, member), on the item's path.
    static let secretChangedSignal = ("io.github.keychain_cli.Watch", "SecretChanged")

    /// Tells watchers that the secret of `item` changed: ``announceSecretChanged(at:_:_:)``. It asks
    /// the keyring nothing; writing the item's label again would make gnome-keyring send
    /// `ItemChanged`, but also rewrite its whole file once more, which made `set` slower than
    /// secret-tool's on a large keyring (bench/RESULTS.md).
    func announceSecretChanged(_ item: UnsafeMutablePointer<SecretItem>, _ operation: BoundedOperation) throws {
        let proxy = UnsafeMutableRawPointer(item).assumingMemoryBound(to: GDBusProxy.self)
        guard let bus = g_dbus_proxy_get_connection(proxy), let path = g_dbus_proxy_get_object_path(proxy) else {
            return
        }
        try finishAnnouncement(beginAnnouncingSecretChanged(at: String(cString: path), bus, operation), bus, operation)
    }

    /// Sends watchers the signal that the secret of the item at `path` changed (a broadcast on the
    /// item's path) and then a `Peer.Ping` to the bus: the bus handles a connection's messages in
    /// order, so its answer, awaited by ``finishAnnouncement(_:_:_:)``, means the bus has the signal.
    /// (GDBus's own flush runs in a new thread, which cost `set` about 2%.) Sent right behind its
    /// `SetSecret`, the signal reaches watchers after the service has that request.
    func beginAnnouncingSecretChanged(
        at path: String, _ bus: OpaquePointer, _ operation: BoundedOperation
    ) -> BoundedOperation.PendingCall {
        let (interface, member) = Self.secretChangedSignal
        g_dbus_connection_emit_signal(bus, nil, path, interface, member, nil, nil)
        // org.freedesktop.DBus.Peer.Ping() -> ()
        return operation.begin {
            g_dbus_connection_call(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping", nil, nil,
                G_DBUS_CALL_FLAGS_NONE, -1, $0, $1, $2)
        }
    }

    /// Waits until the bus has the signal ``beginAnnouncingSecretChanged(at:_:_:)`` sent.
    func finishAnnouncement(
        _ ping: BoundedOperation.PendingCall, _ bus: OpaquePointer, _ operation: BoundedOperation
    ) throws {
        _ = try operation.end(ping) { OwnedVariant(takingIfAny: g_dbus_connection_call_finish(bus, $0, $1)) }
    }

    /// Reports changes as the Secret Service signals them (sender `org.freedesktop.secrets`, every
    /// collection): `ItemCreated` for a new item, and for an existing item replaced by `CreateItem`
    /// (secret-tool, python keyring, keychain-cli), which is reported as a change; `ItemChanged`;
    /// `ItemDeleted`, named from a map of the watched items' paths seeded at the start (an
    /// `ItemChanged` that changes neither the item's name, label nor `Modified` is no change: a lock
    /// or unlock of its collection); and
    /// keychain-cli's own ``secretChangedSignal``. Another client that only calls
    /// `Item.SetSecret` makes gnome-keyring send no signal: every `interval`
    /// seconds the watched items' `Modified` times (whole seconds) are asked in one pipelined
    /// batch of at most 25 items (more are taken in turn over several polls), so such a change is
    /// reported within `interval` (times the number of batches), unless it falls in the same second
    /// as the item's previous change.
    /// The watch keeps a connection of its own: our wire where `get` would take it (a Unix socket
    /// bus that accepts us), else GIO's (SecretServiceWatchConnection.swift).
    /// - Throws: the errors of connecting to the Secret Service and listing its items.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        try StoreWatch.start { watch, ready in
            let watcher = SignalWatcher(store: self, service: service, report: report)
            do {
                try watcher.begin()
            } catch {
                return ready(error as? KeychainError ?? .backendFailure(detail: "\(error)"))
            }
            ready(nil)
            watcher.run(watch, interval: interval)
        }
    }
}
