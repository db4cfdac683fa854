import FoundationEssentials

/// What a Secret Service client gives an item besides its secret: all its attributes, its label
/// and the content type of its secret. `keychain-cli serve` keeps them with the item in the
/// backend, so that the item reads back as it was stored.
public struct ItemDetails: Codable, Hashable, Sendable {
    /// Every attribute, `xdg:schema` included.
    public var attributes: [String: String]
    public var label: String
    /// The MIME type of the secret, `text/plain` unless the client said otherwise.
    public var contentType: String

    public init(attributes: [String: String], label: String, contentType: String) {
        self.attributes = attributes
        self.label = label
        self.contentType = contentType
    }
}

/// An item with its details (nil for an item written without, by `set` for example) and dates,
/// never its secret.
public struct DetailedItem: Hashable, Sendable {
    public var address: SecretAddress
    public var details: ItemDetails?
    public var created: Date?
    public var modified: Date?

    public init(address: SecretAddress, details: ItemDetails?, created: Date?, modified: Date?) {
        self.address = address
        self.details = details
        self.created = created
        self.modified = modified
    }
}

/// A store that keeps ``ItemDetails`` with its items: what `serve` can serve from (the vault,
/// a team vault, OpenBao). Writing a secret with ``SecretStore/setSecret(_:service:key:)`` keeps
/// the item's details; deleting the item deletes them.
public protocol DetailedSecretStore: SecretStore {
    /// Every item with its details and dates, in no particular order; never reads secrets where
    /// the backend can avoid it.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func detailedItems() throws(KeychainError) -> [DetailedItem]

    /// Stores `secret` and `details` under `service` and `key` in one write, replacing any item
    /// there.
    /// - Throws: ``KeychainError`` when the backend cannot store it; the old item is then kept.
    func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError)

    /// Gets now whatever later writes will need from the user (a new vault's passphrase), for a
    /// long-running writer that cannot ask later; the default needs nothing.
    func prepareForWrites() throws(KeychainError)
}

extension DetailedSecretStore {
    public func prepareForWrites() throws(KeychainError) {}
}
