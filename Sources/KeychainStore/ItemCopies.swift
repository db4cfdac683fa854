import FoundationEssentials

// What `cp` and `mv` carry from one item to another: its secret and, where both backends keep
// them, its label, attributes and content type.

extension SecretStore {
    public func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails? { nil }

    public func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool {
        try storeSecret(secret, service: service, key: key, replacing: replacing)
    }

    /// ``storeSecret(_:details:service:key:replacing:)`` without details: ``setSecret(_:service:key:)``
    /// when `replacing`, else ``addSecret(_:service:key:)``.
    package func storeSecret(_ secret: Data, service: ServiceName, key: KeychainKey, replacing: Bool)
        throws(KeychainError) -> Bool
    {
        guard replacing else { return try addSecret(secret, service: service, key: key) }
        try setSecret(secret, service: service, key: key)
        return true
    }
}

extension DetailedSecretStore {
    public func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails? {
        let address = SecretAddress(service: service, key: key)
        return try detailedItems(in: [service]).first { $0.address == address }?.details
    }

    /// With details, in one write (``addItem(_:details:at:)`` decides under the vault's lock or by
    /// OpenBao's check-and-set that nothing is there).
    public func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool {
        guard let details else { return try storeSecret(secret, service: service, key: key, replacing: replacing) }
        guard replacing else {
            return try addItem(secret, details: details, at: SecretAddress(service: service, key: key)) != nil
        }
        try setSecret(secret, details: details, service: service, key: key)
        return true
    }
}

/// When an item was created and last changed (nil where unknown), carried by `cp` and `mv` to a
/// backend that keeps what a writer gives.
public struct ItemDates: Equatable, Sendable {
    public var created: Date?
    public var modified: Date?

    public init(created: Date? = nil, modified: Date? = nil) { (self.created, self.modified) = (created, modified) }
}

extension ItemDetails {
    /// These details for the item moved or copied from `source` to `target`: a label keychain-cli
    /// gave (``ItemInfo/defaultLabel(service:key:)``) names the target, and the `service` and
    /// `username` attributes that named the source name the target; every other detail is kept.
    public func relocated(from source: SecretAddress, to target: SecretAddress) -> ItemDetails {
        var details = self
        if label == ItemInfo.defaultLabel(service: source.service, key: source.key) {
            details.label = ItemInfo.defaultLabel(service: target.service, key: target.key)
        }
        if attributes["service"] == source.service.rawValue && attributes["username"] == source.key.rawValue {
            details.attributes["service"] = target.service.rawValue
            details.attributes["username"] = target.key.rawValue
        }
        return details
    }
}
