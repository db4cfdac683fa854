import FoundationEssentials
import KeychainDBus
import KeychainStore
import KeychainSystem

/// The state of one Secret Service watch, on its thread: its connection (a wire or GDBus, one
/// logic for both: ``WatchConnection``), the watched items.
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

    static let collectionInterface = "org.freedesktop.Secret.Collection"
    /// What the watch subscribes to: the Secret Service's collections (sender
    /// `org.freedesktop.secrets`); keychain-cli's SetSecret (from any sender, so it only makes the
    /// item be read again); the service's name losing its owner.
    static let rules = [
        BusMatchRule(sender: SecretServiceConnection.busName, interface: collectionInterface),
        BusMatchRule(
            interface: SecretServiceStore.secretChangedSignal.0, member: SecretServiceStore.secretChangedSignal.1),
        BusMatchRule(
            sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
            path: "/org/freedesktop/DBus", arg0: SecretServiceConnection.busName),
    ]

    let store: SecretServiceStore
    let service: ServiceName?
    let report: @Sendable (WatchEvent) -> Void
    /// The bus connection, kept while the watch runs.
    var connection: WatchConnection?
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
        let connection = try WatchConnection.subscribing(to: Self.rules, store.connection, seconds: store.timeout)
        self.connection = connection
        try connection.withClient("list the items") { client in
            let found = try client.searchPaths(service.map { [("service", $0.rawValue)] } ?? [])
            let paths = found.unlocked + found.locked
            for (path, info) in zip(paths, try client.infos(paths, keysOnly: false)) {
                if let info, service == nil || info.service == service?.rawValue { known[path] = Known(info) }
            }
        }
    }

    /// Handles signals as they come, and polls `Modified` every `interval` seconds, until the
    /// watch is cancelled (its descriptor wakes the wait) or fails.
    func run(_ watch: StoreWatch, interval: Double) {
        guard let connection else { return }
        var nextPoll = monotonicSeconds() + interval
        while !watch.isCancelled {
            do {
                file(try connection.signals(until: nextPoll, waking: watch.cancelDescriptor))
                if serviceLeft {
                    throw KeychainError.noSecretService(
                        detail: "the Secret Service (\(SecretServiceConnection.busName)) left the session bus. "
                            + "Start it again (gnome-keyring-daemon, KeePassXC, kwalletd) and watch again")
                }
                if !pending.isEmpty { try settle(watch) }
                let signals = Self.coalesced(pending)
                pending.removeAll()
                for (member, path) in signals where !watch.isCancelled { try handle(member, path) }
                if monotonicSeconds() >= nextPoll && !watch.isCancelled {
                    try pollModified()
                    nextPoll = monotonicSeconds() + interval
                }
            } catch {
                if !watch.isCancelled {
                    // Closed, as the connection says or as the wait learned first (GDBus's thread
                    // marks its connection closed moments after the socket hangs up).
                    let closed = connection.isClosed || error as? KeychainError == KeychainError(DBusError.closed)
                    let failure =
                        closed
                        ? KeychainError.noSessionBus(detail: "the session bus connection closed")
                        : error as? KeychainError ?? .backendFailure(detail: "\(error)")
                    report(.failure(failure))
                }
                return
            }
        }
    }

    /// Notes what each signal says: an item's change to read, or the service gone.
    private func file(_ signals: [BusSignal]) {
        let (watchInterface, watchMember) = SecretServiceStore.secretChangedSignal
        for signal in signals {
            if signal.interface == Self.collectionInterface, signal.arguments.count == 1,
                case .objectPath(let item) = signal.arguments[0]
            {
                pending.append((signal.member, item))
            } else if signal.interface == watchInterface, signal.member == watchMember,
                signal.path.hasPrefix("/org/freedesktop/secrets/")
            {
                pending.append(("SecretChanged", signal.path))
            } else if signal.member == "NameOwnerChanged", signal.arguments.count == 3,
                signal.arguments[2] == .string("")
            {
                serviceLeft = true
            }
        }
    }

    /// Lets the rest of a burst of signals arrive: until 3 ms pass without one, 20 ms at most;
    /// once an item is created, 10 ms and 150 ms. KeePassXC announces a new item with an
    /// ItemChanged per property it sets, on the collection and on each alias, within a few ms on
    /// an idle machine (tens on a loaded one, where a later one was read as a change);
    /// gnome-keyring sends one signal per change.
    private func settle(_ watch: StoreWatch) throws {
        let start = monotonicSeconds()
        var (gap, most) = (0.003, 0.02)
        var quiet = start + gap
        while let connection, monotonicSeconds() < min(start + most, quiet) {
            if pending.contains(where: { $0.0 == "ItemCreated" }) {
                (gap, most) = (0.01, 0.15)
                quiet = max(quiet, monotonicSeconds() + gap)
            }
            let count = pending.count
            let more = try connection.signals(until: min(start + most, quiet), waking: watch.cancelDescriptor)
            if more.isEmpty { return }
            file(more)
            if pending.count != count { quiet = monotonicSeconds() + gap }
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
        guard member == "ItemCreated" || member == "ItemChanged" || member == "SecretChanged", let connection
        else { return }
        let info = try connection.withClient("read an item's attributes") {
            try $0.infos([path], keysOnly: false)[0]
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
        guard let connection, !known.isEmpty else { return }
        let all = known.keys.sorted()
        let start = all.firstIndex { $0 > pollCursor } ?? 0
        let paths = Array((all[start...] + all[..<start]).prefix(Self.itemsPerPoll))
        pollCursor = paths.last ?? ""
        let times = try connection.withClient("read the items' times") { client in
            try client.itemProperties(["Modified"], of: paths).map { SecretServiceClient.date($0?[0] ?? nil) }
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
