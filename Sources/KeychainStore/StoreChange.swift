import Crypto
import FoundationEssentials

/// One change to one item, as a backend's watcher reports it: never the secret itself.
public struct StoreChange: Hashable, Sendable {
    /// What happened to the item.
    public enum Kind: String, Hashable, Sendable, Codable {
        /// A new item.
        case created
        /// An existing item got a new secret (or the same secret written again), label or date.
        case changed
        /// The item is gone.
        case deleted
    }

    public var kind: Kind
    /// The service of the item.
    public var service: String
    /// The key of the item.
    public var key: String
    /// When the watcher saw the change.
    public var time: Date
    /// The program that wrote the item, when the backend records one (`keychain-cli`,
    /// `Python keyring library`); for a deletion, the last one known.
    public var application: String?

    public init(kind: Kind, service: String, key: String, time: Date = Date(), application: String? = nil) {
        self.kind = kind
        self.service = service
        self.key = key
        self.time = time
        self.application = application
    }
}

/// What a watcher reports: a change, or the failure that ended it (the last report).
public enum WatchEvent: Sendable {
    case change(StoreChange)
    case failure(KeychainError)
}

extension SecretStore {
    /// The default watcher: every `interval` seconds it lists the items and reads their secrets,
    /// and reports the items whose secret, or whose modification date, differs from the last look.
    /// A backend that can do better (signals, file notifications, versions) overrides it.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        try StoreWatch.polling(interval: interval, report: report) { () throws(KeychainError) in
            var snapshot: [ItemID: ItemState] = [:]
            do {
                for info in try items(service: service) {
                    guard let name = try? ServiceName(info.service), let key = try? KeychainKey(info.key),
                        let secret = try secret(service: name, key: key)
                    else { continue }
                    snapshot[ItemID(service: info.service, key: info.key)] = ItemState(
                        fingerprint: .digest(secret, modified: info.modified), application: info.application)
                }
            } catch let error as KeychainError {
                throw error
            } catch {
                throw .backendFailure(detail: "\(error)")
            }
            return snapshot
        }
    }
}

/// An item's address in a watcher's snapshot.
package struct ItemID: Hashable, Comparable, Sendable {
    package var service: String
    package var key: String

    package init(service: String, key: String) {
        self.service = service
        self.key = key
    }

    package static func < (lhs: ItemID, rhs: ItemID) -> Bool { (lhs.service, lhs.key) < (rhs.service, rhs.key) }
}

/// What a watcher remembers of an item to notice that it changed.
package struct ItemState: Sendable {
    /// Changes when the item changes: a digest of its secret, a version, a modification time.
    package var fingerprint: Fingerprint
    package var application: String?

    package init(fingerprint: Fingerprint, application: String?) {
        self.fingerprint = fingerprint
        self.application = application
    }
}

/// A value that differs when the item differs. Digests keep secrets out of the watcher's memory.
package enum Fingerprint: Hashable, Sendable {
    /// Kept as the digest value itself, in place: an array of its bytes was two allocations per
    /// item, 200 bytes, and a vault of 10,000 items kept 2 MiB of them in serve's watcher.
    case sha256(SHA256Digest)
    case number(UInt64)

    /// A SHA-256 digest of `secret` and `modified`.
    package static func digest(_ secret: some DataProtocol, modified: Date? = nil) -> Fingerprint {
        var hash = SHA256()
        hash.update(data: secret)
        if let modified { withUnsafeBytes(of: modified.timeIntervalSince1970) { hash.update(bufferPointer: $0) } }
        return .sha256(hash.finalize())
    }
}

/// The changes that turn snapshot `old` into `new`, sorted by service and key.
func differences(from old: [ItemID: ItemState], to new: [ItemID: ItemState], at time: Date = Date()) -> [StoreChange] {
    var changes: [(ItemID, StoreChange)] = []
    for (id, state) in new {
        if let before = old[id] {
            if before.fingerprint != state.fingerprint {
                changes.append(
                    (
                        id,
                        StoreChange(
                            kind: .changed, service: id.service, key: id.key, time: time, application: state.application
                        )
                    ))
            }
        } else {
            changes.append(
                (
                    id,
                    StoreChange(
                        kind: .created, service: id.service, key: id.key, time: time, application: state.application)
                ))
        }
    }
    for (id, state) in old where new[id] == nil {
        changes.append(
            (
                id,
                StoreChange(
                    kind: .deleted, service: id.service, key: id.key, time: time, application: state.application)
            ))
    }
    return changes.sorted { $0.0 < $1.0 }.map(\.1)
}
