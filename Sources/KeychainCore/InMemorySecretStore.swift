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
/// `deleteAll` touches only the given service.
public final class InMemorySecretStore: SecretStore {
    private struct Entry {
        var secret: Data
        var info: ItemInfo
    }

    private let state = Mutex([ServiceName: [KeychainKey: Entry]]())

    /// An empty store.
    public init() {}

    public func secret(service: ServiceName, key: KeychainKey) throws -> Data? {
        state.withLock { $0[service]?[key]?.secret }
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws {
        let now = Date()
        state.withLock {
            if var entry = $0[service]?[key] {
                entry.secret = secret
                entry.info.modified = now
                $0[service]![key] = entry
            } else {
                let info = ItemInfo(
                    service: service.rawValue, key: key.rawValue,
                    label: ItemInfo.defaultLabel(service: service, key: key),
                    application: "keychain-cli", created: now, modified: now)
                $0[service, default: [:]][key] = Entry(secret: secret, info: info)
            }
        }
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws -> Bool {
        state.withLock { $0[service]?.removeValue(forKey: key) != nil }
    }

    public func items(service: ServiceName?) throws -> [ItemInfo] {
        state.withLock { entries in
            let services = service.map { [$0] } ?? Array(entries.keys)
            return services.flatMap { entries[$0]?.values.map(\.info) ?? [] }
        }
    }

    public func deleteAll(service: ServiceName) throws -> Int {
        state.withLock { $0.removeValue(forKey: service)?.count ?? 0 }
    }
}
