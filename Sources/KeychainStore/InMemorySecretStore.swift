import Dispatch
import FoundationEssentials
import KeychainSystem

/// A ``SecretStore`` that keeps secrets in a dictionary in this process's memory.
///
/// Use it to test code built on ``Keychain`` without a Secret Service:
/// ```swift
/// let keychain = Keychain(service: try ServiceName("test"), store: InMemorySecretStore())
/// ```
/// It is thread-safe and behaves like the real backends: missing items are `nil`, `false` or `0`,
/// `deleteAll` touches only the given service.
public final class InMemorySecretStore: SecretStore {
    private struct Entry {
        var secret: Data
        var info: ItemInfo
        var details: ItemDetails?
        /// This store's count of writes when the item was last written.
        var revision = 0
    }

    private let state = Locked([ServiceName: [KeychainKey: Entry]]())
    private let writes = Locked(0)
    private let label = Locked<String?>(nil)
    /// The running watches: each gets every change, and filters by service itself.
    private let watchers = Locked([ObjectIdentifier: @Sendable (StoreChange) -> Void]())

    /// An empty store.
    public init() {}

    public func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        state.withLock { $0[service]?[key]?.secret }
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        let now = Date()
        let kind: StoreChange.Kind = state.withLock {
            if var entry = $0[service]?[key] {
                entry.secret = secret
                entry.info.modified = now
                entry.revision = nextRevision()
                $0[service]![key] = entry
                return .changed
            } else {
                let info = ItemInfo(
                    service: service.rawValue, key: key.rawValue,
                    label: ItemInfo.defaultLabel(service: service, key: key),
                    application: "keychain-cli", created: now, modified: now)
                $0[service, default: [:]][key] = Entry(secret: secret, info: info, revision: nextRevision())
                return .created
            }
        }
        announce([StoreChange(kind: kind, service: service.rawValue, key: key.rawValue, application: "keychain-cli")])
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        let deleted = state.withLock { $0[service]?.removeValue(forKey: key) }
        guard let deleted else { return false }
        announce([
            StoreChange(
                kind: .deleted, service: service.rawValue, key: key.rawValue, application: deleted.info.application)
        ])
        return true
    }

    public func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        state.withLock { entries in
            let services = service.map { [$0] } ?? Array(entries.keys)
            return services.flatMap { entries[$0]?.values.map(\.info) ?? [] }
        }
    }

    public func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        let deleted = state.withLock { $0.removeValue(forKey: service) } ?? [:]
        announce(
            deleted.sorted { $0.key < $1.key }.map {
                StoreChange(
                    kind: .deleted, service: service.rawValue, key: $0.key.rawValue,
                    application: $0.value.info.application)
            })
        return deleted.count
    }

    /// Reports every change made through this store, as it is made: `interval` is not used.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        // Changes are queued by the writer and reported on the watcher's thread, in order.
        let queue = Locked([StoreChange]())
        let arrived = DispatchSemaphore(value: 0)
        let watchers = self.watchers
        return try StoreWatch.start { watch, ready in
            let id = ObjectIdentifier(watch)
            watchers.withLock {
                $0[id] = { change in
                    guard service == nil || change.service == service?.rawValue else { return }
                    queue.withLock { $0.append(change) }
                    arrived.signal()
                }
            }
            defer { _ = watchers.withLock { $0.removeValue(forKey: id) } }
            ready(nil)
            while !watch.isCancelled {
                _ = arrived.wait(timeout: .now() + 0.05)
                for change in queue.withLock({ queue in
                    defer { queue.removeAll() }
                    return queue
                })
                where !watch.isCancelled {
                    report(.change(change))
                }
            }
        }
    }

    private func announce(_ changes: [StoreChange]) {
        let watchers = watchers.withLock { Array($0.values) }
        for change in changes {
            for watcher in watchers { watcher(change) }
        }
    }

    private func nextRevision() -> Int {
        writes.withLock { count in
            count += 1
            return count
        }
    }
}

// Details, for `serve`'s session collection (kept in memory only) and for tests of what is built
// on DetailedSecretStore. Every decision is made under the store's lock.
extension InMemorySecretStore: DetailedSecretStore {
    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        state.withLock { entries in
            entries.flatMap { service, keys in
                keys.map { key, entry in Self.detailed(SecretAddress(service: service, key: key), entry) }
            }
        }
    }

    @discardableResult
    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError) -> DetailedItem
    {
        let address = SecretAddress(service: service, key: key)
        let (item, kind) = state.withLock { entries in
            let old = entries[service]?[key]
            let entry = Self.entry(secret, details, at: address, created: old?.info.created, revision: nextRevision())
            entries[service, default: [:]][key] = entry
            return (Self.detailed(address, entry), old == nil ? StoreChange.Kind.created : .changed)
        }
        announce([StoreChange(kind: kind, service: service.rawValue, key: key.rawValue)])
        return item
    }

    public func addItem(_ secret: Data, details: ItemDetails, at address: SecretAddress) throws(KeychainError)
        -> DetailedItem?
    {
        let item: DetailedItem? = state.withLock { entries in
            guard entries[address.service]?[address.key] == nil else { return nil }
            let entry = Self.entry(secret, details, at: address, created: nil, revision: nextRevision())
            entries[address.service, default: [:]][address.key] = entry
            return Self.detailed(address, entry)
        }
        if item != nil {
            announce([StoreChange(kind: .created, service: address.service.rawValue, key: address.key.rawValue)])
        }
        return item
    }

    public func updateItem(
        at address: SecretAddress, movingTo destination: SecretAddress?, _ change: (ItemContents) -> ItemContents?
    ) throws(KeychainError) -> ItemUpdate {
        let target = destination ?? address
        let update: ItemUpdate = state.withLock { entries in
            guard let old = entries[address.service]?[address.key] else { return .missing }
            if target != address && entries[target.service]?[target.key] != nil { return .destinationTaken }
            guard let new = change(ItemContents(secret: old.secret, details: old.details)) else { return .missing }
            if target != address {
                entries[address.service]?[address.key] = nil
                if entries[address.service]?.isEmpty == true { entries[address.service] = nil }
            }
            let entry = Self.entry(
                new.secret, new.details, at: target, created: old.info.created, revision: nextRevision())
            entries[target.service, default: [:]][target.key] = entry
            return .updated(Self.detailed(target, entry))
        }
        if case .updated = update {
            var changes = [StoreChange(kind: .changed, service: target.service.rawValue, key: target.key.rawValue)]
            if target != address {
                changes = [
                    StoreChange(kind: .deleted, service: address.service.rawValue, key: address.key.rawValue),
                    StoreChange(kind: .created, service: target.service.rawValue, key: target.key.rawValue),
                ]
            }
            announce(changes)
        }
        return update
    }

    public func deleteItem(at address: SecretAddress, if matches: (ItemContents) -> Bool) throws(KeychainError)
        -> Bool
    {
        let deleted: Entry? = state.withLock { entries in
            guard let entry = entries[address.service]?[address.key],
                matches(ItemContents(secret: entry.secret, details: entry.details))
            else {
                return nil
            }
            entries[address.service]?[address.key] = nil
            if entries[address.service]?.isEmpty == true { entries[address.service] = nil }
            return entry
        }
        guard let deleted else { return false }
        announce([
            StoreChange(
                kind: .deleted, service: address.service.rawValue, key: address.key.rawValue,
                application: deleted.info.application)
        ])
        return true
    }

    public func collectionLabel() throws(KeychainError) -> String? { label.withLock { $0 } }

    public func setCollectionLabel(_ label: String) throws(KeychainError) { self.label.withLock { $0 = label } }

    private static func entry(
        _ secret: Data, _ details: ItemDetails?, at address: SecretAddress, created: Date?, revision: Int
    ) -> Entry {
        let now = Date()
        let info = ItemInfo(
            service: address.service.rawValue, key: address.key.rawValue,
            label: details?.label ?? ItemInfo.defaultLabel(service: address.service, key: address.key),
            application: details.map { $0.attributes["application"] } ?? "keychain-cli", created: created ?? now,
            modified: now)
        return Entry(secret: secret, info: info, details: details, revision: revision)
    }

    private static func detailed(_ address: SecretAddress, _ entry: Entry) -> DetailedItem {
        DetailedItem(
            address: address, details: entry.details, created: entry.info.created, modified: entry.info.modified,
            revision: entry.revision)
    }
}
