import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

// A tree vault keeps each item's Secret Service details in the item's own document, so one write
// of one file stores both. Every write below decides what it overwrites under the vault's lock,
// on the files as they are then.
extension TreeVaultStore: DetailedSecretStore {
    /// The label `serve` gives its collection, in plaintext beside the recipients.
    static let collectionLabelFile = ".collection-label"

    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        try detailedItems(at: try addresses(service: nil))
    }

    public func detailedItems(in services: Set<ServiceName>) throws(KeychainError) -> [DetailedItem] {
        var addresses: [SecretAddress] = []
        for service in services.sorted() { addresses += try self.addresses(service: service) }
        return try detailedItems(at: addresses)
    }

    /// The items at `addresses`, each from its file; one removed meanwhile is left out.
    private func detailedItems(at addresses: [SecretAddress]) throws(KeychainError) -> [DetailedItem] {
        zip(addresses, try entries(at: addresses)).compactMap { address, entry in
            entry.map { VaultStore.detailed(address, $0) }
        }
    }

    /// From the item's own file (not every item of its service).
    public func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails? {
        try entry(at: SecretAddress(service: service, key: key))?.details
    }

    /// Opens the vault's identity now (a passphrase tree vault's), for a writer that cannot ask later.
    public func prepareForWrites() throws(KeychainError) {
        _ = try recipients()
        if !givenIdentities.isEmpty || keepsIdentity { _ = try identities() }
    }

    @discardableResult
    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError) -> DetailedItem
    {
        let address = SecretAddress(service: service, key: key)
        let now = VaultStore.now()
        return try underLock { () throws(KeychainError) in
            let entry = VaultStore.Entry(
                secret: secret, created: try entry(at: address)?.created ?? now, modified: now, details: details)
            try write(entry, at: address, to: try recipients())
            return VaultStore.detailed(address, entry)
        }
    }

    public func addItem(_ secret: Data, details: ItemDetails, at address: SecretAddress) throws(KeychainError)
        -> DetailedItem?
    {
        let now = VaultStore.now()
        return try underLock { () throws(KeychainError) -> DetailedItem? in
            guard try !occupied(address) else { return nil }
            let entry = VaultStore.Entry(secret: secret, created: now, modified: now, details: details)
            try write(entry, at: address, to: try recipients())
            return VaultStore.detailed(address, entry)
        }
    }

    /// Decided under the lock; a move writes the destination, then removes the item.
    public func updateItem(
        at address: SecretAddress, movingTo destination: SecretAddress?, _ change: (ItemContents) -> ItemContents?
    ) throws(KeychainError) -> ItemUpdate {
        let now = VaultStore.now()
        let target = destination ?? address
        guard Self.isTree(directory) else { return .missing }
        return try underLock { () throws(KeychainError) -> ItemUpdate in
            guard let old = try entry(at: address) else { return .missing }
            if target != address, try exists(target) { return .destinationTaken }
            guard let new = change(ItemContents(secret: old.secret, details: old.details)) else { return .missing }
            let entry = VaultStore.Entry(
                secret: new.secret, created: old.created ?? now, modified: now, details: new.details)
            try write(entry, at: target, to: try recipients())
            if target != address { _ = try remove(address) }
            return .updated(VaultStore.detailed(target, entry))
        }
    }

    public func deleteItem(at address: SecretAddress, if matches: (ItemContents) -> Bool) throws(KeychainError)
        -> Bool
    {
        guard Self.isTree(directory) else { return false }
        return try underLock { () throws(KeychainError) -> Bool in
            guard let entry = try entry(at: address),
                matches(ItemContents(secret: entry.secret, details: entry.details))
            else {
                return false
            }
            return try remove(address)
        }
    }

    public func collectionLabel() throws(KeychainError) -> String? {
        try readSmallFile(path(Self.collectionLabelFile), limit: 1 << 16).map { String(decoding: $0, as: UTF8.self) }
    }

    public func setCollectionLabel(_ label: String) throws(KeychainError) {
        try underLock { () throws(KeychainError) in
            do throws(FileError) {
                try writeFileAtomically(path(Self.collectionLabelFile), Array(label.utf8))
            } catch {
                throw .vaultIO(detail: error.description)
            }
        }
    }
}

extension TreeVaultStore {
    /// Under the lock, with the dates given (else the item's, else now) and the details given
    /// (else, replacing, the item's).
    public func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool {
        let address = SecretAddress(service: service, key: key)
        let now = VaultStore.now()
        return try underLock { () throws(KeychainError) -> Bool in
            let old = try exists(address) ? try entry(at: address) : nil
            guard replacing || old == nil else { return false }
            let entry = VaultStore.Entry(
                secret: secret, created: dates.created ?? old?.created ?? now, modified: dates.modified ?? now,
                details: details ?? old?.details)
            try write(entry, at: address, to: try recipients())
            return true
        }
    }
}
