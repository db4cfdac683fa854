import FoundationEssentials
import KeychainStore
import KeychainSystem

/// Many secrets at once (`import`): the keys of a service are written together, ``fieldsPerWrite``
/// to a request, and each request stores all of its keys or none.
extension OpenBaoStore {
    public func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        var stored = 0
        for (service, chunk) in try Self.requests(for: secrets) {
            var changes: [String: JSONValue] = [:]
            for index in chunk { changes[secrets[index].key.rawValue] = KVValue.encode(secrets[index].secret) }
            try write(service, changes)
            stored += chunk.count
            progress(stored)
        }
    }

    public func checkName(service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try Self.refuseReserved(key)
    }

    /// Each request is a check-and-set on the version of the service's secret it read, so a key
    /// another writer adds meanwhile is kept (the request is made again, without it).
    public func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        var added = [Bool](repeating: false, count: secrets.count)
        var done = 0
        for (service, chunk) in try Self.requests(for: secrets) {
            var chosen: [Int] = []
            try checkAndSet(service) { fields in
                chosen = []
                var changes: [String: JSONValue] = [:]
                for index in chunk {
                    let key = secrets[index].key.rawValue
                    guard fields[key] == nil, changes[key] == nil else { continue }
                    changes[key] = KVValue.encode(secrets[index].secret)
                    chosen.append(index)
                }
                return changes.isEmpty ? nil : changes
            }
            for index in chosen { added[index] = true }
            done += chunk.count
            progress(done)
        }
        return added
    }

    /// The indices of `secrets`, by service in the order they first appear, in runs of at most
    /// ``fieldsPerWrite``.
    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` for a key the details reserve,
    ///   before anything is written.
    private static func requests(for secrets: [SecretToStore]) throws(KeychainError)
        -> [(service: ServiceName, chunk: ArraySlice<Int>)]
    {
        var order: [ServiceName] = []
        var byService: [ServiceName: [Int]] = [:]
        for (index, item) in secrets.enumerated() {
            try refuseReserved(item.key)
            if byService[item.service] == nil { order.append(item.service) }
            byService[item.service, default: []].append(index)
        }
        return order.flatMap { service in
            let indices = byService[service] ?? []
            return stride(from: 0, to: indices.count, by: fieldsPerWrite).map { start in
                (service, indices[start..<min(start + fieldsPerWrite, indices.count)])
            }
        }
    }
}
