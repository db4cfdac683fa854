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
    /// - Throws: the errors of connecting to the Secret Service and listing its items.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        try StoreWatch.start { watch, ready in
            withThreadDefaultContext { context in
                let watcher = SignalWatcher(store: self, service: service, report: report)
                defer { watcher.end() }
                do {
                    try watcher.begin()
                } catch {
                    return ready(error as? KeychainError ?? .backendFailure(detail: "\(error)"))
                }
                ready(nil)
                watcher.run(watch, context: context, interval: interval)
            }
        }
    }
}

/// The state of one Secret Service watch, on its thread: the subscriptions, the watched items.
final class SignalWatcher {
    struct Known {
        var id: ItemID
        var modified: Date?
        var application: String?
        var label: String?

        init(_ info: ItemInfo) {
            id = ItemID(service: info.service, key: info.key)
            modified = info.modified
            application = info.application
            label = info.label
        }
    }

    let store: SecretServiceStore
    let service: ServiceName?
    let report: @Sendable (WatchEvent) -> Void
    /// The bus connection, kept until ``end()``.
    var connected: OwnedObject?
    var bus: OpaquePointer? { connected?.opaque }
    var subscriptions: [guint] = []
    /// Every watched item, by object path.
    var known: [String: Known] = [:]
    /// Signals received, not handled yet: (member, item path).
    var pending: [(String, String)] = []
    var serviceLeft = false
    /// The last item path the previous poll asked about.
    var pollCursor = ""
    /// A poll's cost: each item's `Modified` costs gnome-keyring and this process CPU time, enough
    /// to keep the daemon busy when a large keyring is polled every second, so a poll asks 25 at
    /// most: a service of more items is gone through over several polls.
    static let itemsPerPoll = 25

    init(store: SecretServiceStore, service: ServiceName?, report: @escaping @Sendable (WatchEvent) -> Void) {
        self.store = store
        self.service = service
        self.report = report
    }

    /// Subscribes first, then lists the items, so that no change falls between the two.
    func begin() throws {
        let connected = try BoundedOperation.run("connect", seconds: store.timeout) {
            try store.connection.sharedSessionBus($0)
        }
        self.connected = connected
        let bus = connected.opaque
        let me = Unmanaged.passUnretained(self).toOpaque()
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                bus, SecretServiceConnection.busName, "org.freedesktop.Secret.Collection", nil, nil, nil,
                G_DBUS_SIGNAL_FLAGS_NONE,
                { _, _, _, _, member, parameters, data in
                    let watcher = Unmanaged<SignalWatcher>.fromOpaque(data!).takeUnretainedValue()
                    guard let member, let parameters,
                        g_variant_is_of_type(parameters, keychain_cli_type_object_path_reply()) != 0
                    else { return }
                    watcher.pending.append((String(cString: member), variantString(parameters, child: 0)))
                }, me, nil))
        // keychain-cli's SetSecret: from any sender, so it only makes the item be read again.
        let (interface, member) = SecretServiceStore.secretChangedSignal
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                bus, nil, interface, member, nil, nil, G_DBUS_SIGNAL_FLAGS_NONE,
                { _, _, path, _, _, _, data in
                    let watcher = Unmanaged<SignalWatcher>.fromOpaque(data!).takeUnretainedValue()
                    guard let path else { return }
                    let item = String(cString: path)
                    if item.hasPrefix("/org/freedesktop/secrets/") { watcher.pending.append(("SecretChanged", item)) }
                }, me, nil))
        subscriptions.append(
            g_dbus_connection_signal_subscribe(
                bus, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
                SecretServiceConnection.busName, G_DBUS_SIGNAL_FLAGS_NONE,
                { _, _, _, _, _, parameters, data in
                    let watcher = Unmanaged<SignalWatcher>.fromOpaque(data!).takeUnretainedValue()
                    if let parameters, variantString(parameters, child: 2).isEmpty { watcher.serviceLeft = true }
                }, me, nil))
        try BoundedOperation.run("list the items", seconds: store.timeout) { operation in
            let client = SecretServiceClient(store.connection, operation, bus)
            let found = try client.searchPaths(service.map { [("service", $0.rawValue)] } ?? [])
            let paths = found.unlocked + found.locked
            for (path, info) in zip(paths, try client.infos(paths, keysOnly: false)) {
                if let info, service == nil || info.service == service?.rawValue { known[path] = Known(info) }
            }
        }
    }

    func end() {
        guard let bus else { return }
        for subscription in subscriptions { g_dbus_connection_signal_unsubscribe(bus, subscription) }
        subscriptions = []
        connected = nil
    }

    /// Handles signals as they come, and polls `Modified` every `interval` seconds, until the
    /// watch is cancelled or fails.
    func run(_ watch: StoreWatch, context: OpaquePointer, interval: Double) {
        // Wakes the loop every 100 ms, to see a cancellation.
        let tick = WakeUpSource(milliseconds: 100, on: context)
        defer { withExtendedLifetime(tick) {} }
        var nextPoll = Date() + interval
        while !watch.isCancelled {
            g_main_context_iteration(context, 1)
            do {
                if g_dbus_connection_is_closed(bus) != 0 {
                    throw KeychainError.noSessionBus(detail: "the session bus connection closed")
                }
                if serviceLeft {
                    throw KeychainError.noSecretService(
                        detail: "the Secret Service (\(SecretServiceConnection.busName)) left the session bus. "
                            + "Start it again (gnome-keyring-daemon, KeePassXC, kwalletd) and watch again")
                }
                if !pending.isEmpty { settle(context) }
                let signals = Self.coalesced(pending)
                pending.removeAll()
                for (member, path) in signals where !watch.isCancelled { try handle(member, path) }
                if Date() >= nextPoll && !watch.isCancelled {
                    try pollModified()
                    nextPoll = Date() + interval
                }
            } catch {
                if !watch.isCancelled {
                    report(.failure(error as? KeychainError ?? .backendFailure(detail: "\(error)")))
                }
                return
            }
        }
    }

    /// Lets the rest of a burst of signals arrive: until 3 ms pass without one, 20 ms at most.
    /// KeePassXC announces a new item with an ItemChanged per property it sets, on the collection
    /// and on each alias, within a few ms; gnome-keyring sends one signal per change.
    private func settle(_ context: OpaquePointer) {
        let end = Date() + 0.02
        var count = pending.count
        var quiet = Date() + 0.003
        while Date() < min(end, quiet) {
            while g_main_context_iteration(context, 0) != 0 {}
            if pending.count != count {
                count = pending.count
                quiet = Date() + 0.003
            }
            usleep(500)
        }
    }

    /// One read per item for a batch of signals, until the item's deletion: each read asks the
    /// item as it is now, so a second one learns nothing. It keeps the strongest reason:
    /// keychain-cli's SecretChanged (always a change), then ItemCreated, then ItemChanged.
    static func coalesced(_ signals: [(String, String)]) -> [(String, String)] {
        let strength = ["ItemChanged": 0, "ItemCreated": 1, "SecretChanged": 2]
        var result: [(String, String)] = []
        var reading: [String: Int] = [:]
        for (member, path) in signals {
            guard let rank = strength[member] else {
                reading[path] = nil
                result.append((member, path))
                continue
            }
            if let index = reading[path] {
                if rank > strength[result[index].0] ?? 0 { result[index].0 = member }
            } else {
                reading[path] = result.count
                result.append((member, path))
            }
        }
        return result
    }

    private func emit(_ kind: StoreChange.Kind, _ item: Known) {
        report(
            .change(StoreChange(kind: kind, service: item.id.service, key: item.id.key, application: item.application)))
    }

    private func handle(_ member: String, _ path: String) throws {
        let before = known[path]
        if member == "ItemDeleted" {
            if let before {
                known[path] = nil
                emit(.deleted, before)
            }
            return
        }
        guard member == "ItemCreated" || member == "ItemChanged" || member == "SecretChanged", let bus else { return }
        let info = try BoundedOperation.run("read an item's attributes", seconds: store.timeout) {
            try SecretServiceClient(store.connection, $0, bus).infos([path], keysOnly: false)[0]
        }
        guard let info, service == nil || info.service == service?.rawValue else {
            // Gone, or its attributes moved it out of what is watched.
            if let before {
                known[path] = nil
                emit(.deleted, before)
            }
            return
        }
        let now = Known(info)
        known[path] = now
        if let before, before.id != now.id { emit(.deleted, before) }
        // gnome-keyring sends ItemChanged for every item of a collection it locks or unlocks:
        // nothing of the item changed then (a secret changed by another program moves Modified).
        if member == "ItemChanged", let before, before.id == now.id, before.modified == now.modified,
            before.label == now.label
        {
            return
        }
        emit(before?.id == now.id ? .changed : .created, now)
    }

    /// Reports the watched items whose `Modified` time moved without a signal (`SetSecret`),
    /// asking at most ``itemsPerPoll`` of them per poll, in turn.
    private func pollModified() throws {
        guard let bus, !known.isEmpty else { return }
        let all = known.keys.sorted()
        let start = all.firstIndex { $0 > pollCursor } ?? 0
        let paths = Array((all[start...] + all[..<start]).prefix(Self.itemsPerPoll))
        pollCursor = paths.last ?? ""
        let times = try BoundedOperation.run("read the items' times", seconds: store.timeout) { operation in
            try SecretServiceClient(store.connection, operation, bus).itemProperties(["Modified"], of: paths).map {
                SecretServiceClient.date($0?[0] ?? nil)
            }
        }
        for (path, modified) in zip(paths, times) {
            guard let modified, var item = known[path], let previous = item.modified, modified > previous else {
                continue
            }
            item.modified = modified
            known[path] = item
            emit(.changed, item)
        }
    }
}
