import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A ``SecretStore`` that keeps secrets in a dictionary in this process's memory.
///
/// Use it to test code built on ``Keychain`` without a Secret Service:
/// ```swift
/// let keychain = Keychain(service: try ServiceName("test"), store: InMemorySecretStore())
/// ```
/// It is thread-safe and behaves like the real backends: missing items are `nil`, `false` or `0`,
/// `deleteAll` touches only the given service. ``readCount`` lets tests see how often the
/// backend was actually asked for a secret.
public final class InMemorySecretStore: SecretStore {
    private struct Entry {
        var secret: Data
        var info: ItemInfo
    }

    private struct State {
        var entries: [ServiceName: [KeychainKey: Entry]] = [:]
        var reads = 0
    }

    private let state = Mutex(State())

    /// An empty store.
    public init() {}

    /// How many times ``secret(service:key:)`` has been called.
    public var readCount: Int { state.withLock { $0.reads } }

    public func secret(service: ServiceName, key: KeychainKey) throws -> Data? {
        state.withLock {
            $0.reads += 1
            return $0.entries[service]?[key]?.secret
        }
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws {
        let now = Date()
        state.withLock {
            if var entry = $0.entries[service]?[key] {
                entry.secret = secret
                entry.info.modified = now
                $0.entries[service]![key] = entry
            } else {
                let info = ItemInfo(
                    service: service.rawValue, key: key.rawValue,
                    label: ItemInfo.defaultLabel(service: service, key: key),
                    application: "keychain-cli", created: now, modified: now)
                $0.entries[service, default: [:]][key] = Entry(secret: secret, info: info)
            }
        }
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws -> Bool {
        state.withLock { $0.entries[service]?.removeValue(forKey: key) != nil }
    }

    public func items(service: ServiceName?) throws -> [ItemInfo] {
        state.withLock { state in
            let services = service.map { [$0] } ?? Array(state.entries.keys)
            return services.flatMap { state.entries[$0]?.values.map(\.info) ?? [] }
        }
    }

    public func deleteAll(service: ServiceName) throws -> Int {
        state.withLock { $0.entries.removeValue(forKey: service)?.count ?? 0 }
    }
}
