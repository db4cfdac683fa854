import FoundationEssentials

// The vault keeps each item's Secret Service details beside its secret, in the same document
// (version 2 once one item has them), so one write stores both.
extension VaultStore: DetailedSecretStore {
    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        try read { entries in
            entries.flatMap { service, keys in
                keys.map { key, entry in
                    DetailedItem(
                        address: SecretAddress(service: service, key: key), details: entry.details,
                        created: entry.created, modified: entry.modified)
                }
            }
        }
    }

    /// Every secret from one read of the vault (the default would read the file once per item).
    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        try read { entries in addresses.map { entries[$0.service]?[$0.key]?.secret } }
    }

    /// Opens the vault, or asks the passphrase of the vault the first write will create.
    public func prepareForWrites() throws(KeychainError) {
        try state.withLock { state throws(KeychainError) in
            _ = try load(&state)
            if state.header == nil && state.recipients == nil { _ = try passphrase(.create, state: &state) }
        }
    }

    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError)
    {
        let now = Date()
        try modify { entries in
            let created = entries[service]?[key]?.created ?? now
            entries[service, default: [:]][key] = Entry(
                secret: secret, created: created, modified: now, details: details)
            return ((), true)
        }
    }

    /// Decided under the write lock: of two writers, one adds and the other is told no.
    public func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        let now = Date()
        return try modify { entries in
            guard entries[service]?[key] == nil else { return (false, false) }
            entries[service, default: [:]][key] = Entry(secret: secret, created: now, modified: now, details: nil)
            return (true, true)
        }
    }
}
