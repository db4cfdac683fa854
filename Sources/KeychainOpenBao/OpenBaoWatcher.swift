import FoundationEssentials
import KeychainStore
import KeychainSystem

// How an OpenBao KV mount is watched: OpenBao sends no events a token of a KV reader may
// subscribe to, so the watcher polls. Each look is one GET of the service's secret (every
// secret's under the mount, after listing them, for all services), and reports the fields whose
// value (or details, which serve keeps beside it) differs from the last look: a new version that
// leaves a field as it was reports nothing.
extension OpenBaoStore {
    /// Polls every `interval` seconds (at least 0.1).
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        // The versions last seen, so that an unchanged secret's fields are not digested again. A
        // soft-deleted version keeps its number (the answer is a 404 with it), not its fields.
        let seen = Locked([ServiceName: (version: Int, deleted: Bool, items: [ItemID: ItemState])]())
        return try StoreWatch.polling(interval: max(0.1, interval), report: report) { () throws(KeychainError) in
            let services: [ServiceName]
            if let service { services = [service] } else { services = try self.secretPaths() }
            var snapshot: [ItemID: ItemState] = [:]
            for name in services {
                // Every service: those the token may read (see detailedItems()).
                guard let secret = service == nil ? try self.readableSecret(name) : try self.read(name) else {
                    continue
                }
                let items: [ItemID: ItemState]
                if let known = seen.withLock({ $0[name] }), known.version == secret.version,
                    known.deleted == secret.fields.isEmpty
                {
                    items = known.items
                } else {
                    var fresh: [ItemID: ItemState] = [:]
                    // An item's details (serve's) are part of it, not an item of their own.
                    for (key, value) in secret.fields where !Self.isDetailsField(key) {
                        let details = secret.fields[Self.detailsField(key)].map { Data($0.jsonText.utf8) } ?? Data()
                        fresh[ItemID(service: name.rawValue, key: key)] = ItemState(
                            fingerprint: .digest(KVValue.decode(value) + details), application: nil)
                    }
                    items = fresh
                    seen.withLock { $0[name] = (secret.version, secret.fields.isEmpty, fresh) }
                }
                snapshot.merge(items) { first, _ in first }
            }
            return snapshot
        }
    }
}
