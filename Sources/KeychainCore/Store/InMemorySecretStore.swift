import Dispatch
import FoundationEssentials

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
    }

    private let state = Locked([ServiceName: [KeychainKey: Entry]]())
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
                $0[service]![key] = entry
                return .changed
            } else {
                let info = ItemInfo(
                    service: service.rawValue, key: key.rawValue,
                    label: ItemInfo.defaultLabel(service: service, key: key),
                    application: "keychain-cli", created: now, modified: now)
                $0[service, default: [:]][key] = Entry(secret: secret, info: info)
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
}
