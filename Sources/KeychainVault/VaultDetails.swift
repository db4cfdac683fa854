import FoundationEssentials
import KeychainStore
import KeychainSystem

// The vault keeps each item's Secret Service details beside its secret, in the same document
// (version 2 once one item has them), so one write stores both. Every write below decides what
// it overwrites under the vault's write lock, on the file as it is then.
extension VaultStore: DetailedSecretStore {
    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        try read { entries in
            entries.flatMap { service, keys in
                keys.map { key, entry in Self.detailed(SecretAddress(service: service, key: key), entry) }
            }
        }
    }

    /// Every secret from one read of the vault (the default would read the file once per item).
    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        try read { entries in addresses.map { entries[$0.service]?[$0.key]?.secret } }
    }

    /// Opens the vault, or asks the passphrase of the vault the first write will create.
    public func prepareForWrites() throws(KeychainError) {
        try openBeforeWriting(creating: true)
    }

    @discardableResult
    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError) -> DetailedItem
    {
        let now = Self.now()
        return try modify { entries in
            let entry = Entry(
                secret: secret, created: entries[service]?[key]?.created ?? now, modified: now, details: details)
            entries[service, default: [:]][key] = entry
            return (Self.detailed(SecretAddress(service: service, key: key), entry), true)
        }
    }

    /// Decided under the write lock: of two writers, one adds and the other is told no.
    public func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try add(
            Entry(secret: secret, created: nil, modified: nil, details: nil),
            at: SecretAddress(service: service, key: key))
            != nil
    }

    /// Decided under the write lock, on the file as it is then.
    public func addItem(_ secret: Data, details: ItemDetails, at address: SecretAddress) throws(KeychainError)
        -> DetailedItem?
    {
        try add(Entry(secret: secret, created: nil, modified: nil, details: details), at: address)
    }

    /// Decided, and moved, in one write under the write lock.
    public func updateItem(
        at address: SecretAddress, movingTo destination: SecretAddress?, _ change: (ItemContents) -> ItemContents?
    ) throws(KeychainError) -> ItemUpdate {
        let now = Self.now()
        let target = destination ?? address
        return try modify(creating: false) { entries in
            guard let old = entries[address.service]?[address.key] else { return (.missing, false) }
            if target != address && entries[target.service]?[target.key] != nil { return (.destinationTaken, false) }
            guard let new = change(ItemContents(secret: old.secret, details: old.details)) else {
                return (.missing, false)
            }
            if target != address { Self.remove(address, from: &entries) }
            let entry = Entry(secret: new.secret, created: old.created ?? now, modified: now, details: new.details)
            entries[target.service, default: [:]][target.key] = entry
            return (.updated(Self.detailed(target, entry)), true)
        }
    }

    /// Decided under the write lock, on the file as it is then.
    public func deleteItem(at address: SecretAddress, if matches: (ItemContents) -> Bool) throws(KeychainError)
        -> Bool
    {
        try modify(creating: false) { entries in
            guard let entry = entries[address.service]?[address.key],
                matches(ItemContents(secret: entry.secret, details: entry.details))
            else {
                return (false, false)
            }
            Self.remove(address, from: &entries)
            return (true, true)
        }
    }

    /// Stores `entry` (dated now) at `address` if nothing is there, under the write lock.
    private func add(_ entry: Entry, at address: SecretAddress) throws(KeychainError) -> DetailedItem? {
        let now = Self.now()
        return try modify { entries in
            guard entries[address.service]?[address.key] == nil else { return (nil, false) }
            var entry = entry
            (entry.created, entry.modified) = (now, now)
            entries[address.service, default: [:]][address.key] = entry
            return (Self.detailed(address, entry), true)
        }
    }

    /// Read with the items, from the vault's document.
    public func collectionLabel() throws(KeychainError) -> String? {
        try load().collectionLabel
    }

    /// Written in the vault's document (which becomes version 2), under the write lock.
    public func setCollectionLabel(_ label: String) throws(KeychainError) {
        try underWriteLock(
            withoutDirectory: { nil },
            { file in
                var contents = try load()
                contents.collectionLabel = label
                try write(contents, to: file)
            })
    }

    static func remove(_ address: SecretAddress, from entries: inout Entries) {
        entries[address.service]?[address.key] = nil
        if entries[address.service]?.isEmpty == true { entries[address.service] = nil }
    }

    /// The item as a listing gives it; its revision a digest of its secret and the time of its
    /// last write (the document keeps whole seconds: a rewrite within the same second moves only
    /// the secret).
    static func detailed(_ address: SecretAddress, _ entry: Entry) -> DetailedItem {
        var hasher = Hasher()
        entry.secret.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(entry.modified?.timeIntervalSince1970)
        return DetailedItem(
            address: address, details: entry.details, created: entry.created, modified: entry.modified,
            revision: hasher.finalize())
    }
}

extension VaultStore {
    /// In one write under the lock, with the dates given (else the item's, else now) and the
    /// details given (else, replacing, the item's).
    public func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool {
        let now = Self.now()
        return try modify { entries in
            let old = entries[service]?[key]
            guard replacing || old == nil else { return (false, false) }
            entries[service, default: [:]][key] = Entry(
                secret: secret, created: dates.created ?? old?.created ?? now, modified: dates.modified ?? now,
                details: details ?? old?.details)
            return (true, true)
        }
    }
}
