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
    /// Differs when the item's secret is stored again: a digest of the secret and the time of
    /// the write where the backend keeps one per item (the vault, in whole seconds), of the secret
    /// alone where it keeps one per service (OpenBao); storing the same secret again within the
    /// same second may keep it. A reader compares it to tell a rewrite from no change.
    public var revision: Int

    public init(address: SecretAddress, details: ItemDetails?, created: Date?, modified: Date?, revision: Int = 0) {
        self.address = address
        self.details = details
        self.created = created
        self.modified = modified
        self.revision = revision
    }
}

/// An item's secret and details, as ``DetailedSecretStore/updateItem(at:movingTo:_:)`` reads and
/// rewrites them.
public struct ItemContents: Sendable {
    public var secret: Data
    /// nil for an item written without details (by `set`); nil written removes them.
    public var details: ItemDetails?

    public init(secret: Data, details: ItemDetails?) {
        self.secret = secret
        self.details = details
    }
}

/// What ``DetailedSecretStore/updateItem(at:movingTo:_:)`` did.
public enum ItemUpdate: Hashable, Sendable {
    /// The item was rewritten (and moved, when asked): the item as the backend holds it now.
    case updated(DetailedItem)
    /// Nothing is stored at the address: nothing was written.
    case missing
    /// Something is stored at the destination: nothing was written.
    case destinationTaken
}

/// A store that keeps ``ItemDetails`` with its items: what `serve` can serve from (the vault,
/// a team vault, OpenBao, and the memory of its `session` collection). Writing a secret with
/// ``SecretStore/setSecret(_:service:key:)`` keeps the item's details; deleting the item deletes
/// them.
///
/// A long-running writer such as `serve` keeps a view of the items, which other processes may
/// have outdated by the time it writes: ``addItem(_:details:at:)`` and
/// ``updateItem(at:movingTo:_:)`` decide what they overwrite on what the backend holds at the
/// moment of the write (under the vault's lock, by OpenBao's check-and-set), never on that view.
public protocol DetailedSecretStore: SecretStore {
    /// Every item with its details and dates, in no particular order; never reads secrets where
    /// the backend can avoid it.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func detailedItems() throws(KeychainError) -> [DetailedItem]

    /// The items of `services` only, as ``detailedItems()`` gives them: what a reader that was
    /// told which services changed reads again (the default filters the whole listing).
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func detailedItems(in services: Set<ServiceName>) throws(KeychainError) -> [DetailedItem]

    /// Stores `secret` and `details` under `service` and `key` in one write, replacing any item
    /// there.
    /// - Returns: the item as stored.
    /// - Throws: ``KeychainError`` when the backend cannot store it; the old item is then kept.
    @discardableResult
    func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError) -> DetailedItem

    /// Stores `secret` and `details` at `address` only if nothing is stored there now.
    /// - Returns: the item as stored; nil, and nothing written, when something is there.
    /// - Throws: ``KeychainError`` when the backend cannot answer or store it.
    func addItem(_ secret: Data, details: ItemDetails, at address: SecretAddress) throws(KeychainError)
        -> DetailedItem?

    /// Rewrites the item at `address` from what the backend holds now: `change` gets its secret
    /// and details and returns the new ones, or nil when what is there is not the item the
    /// caller means (then nothing is written, and the answer is ``ItemUpdate/missing``); it may
    /// be called more than once, and must only compute. With a `destination`, the item moves
    /// there, if nothing is stored there now: the vault moves it in one write; OpenBao in one
    /// check-and-set within a service, else writes the destination first and removes the item
    /// after (leaving it where it is if another writer changed it meanwhile), undoing the first
    /// write when the second fails.
    /// - Throws: ``KeychainError`` when the backend cannot answer or store it; nothing is then
    ///   changed.
    func updateItem(
        at address: SecretAddress, movingTo destination: SecretAddress?, _ change: (ItemContents) -> ItemContents?
    ) throws(KeychainError) -> ItemUpdate

    /// Removes the item at `address` if `matches` says that what is there now (its secret and
    /// details) is the item the caller means, decided as ``addItem(_:details:at:)`` decides.
    /// - Returns: false, and nothing removed, when nothing is there or it does not match.
    /// - Throws: ``KeychainError`` when the backend cannot answer or remove it.
    func deleteItem(at address: SecretAddress, if matches: (ItemContents) -> Bool) throws(KeychainError) -> Bool

    /// The label `serve` gives its collection, kept with the items; nil when none was set.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func collectionLabel() throws(KeychainError) -> String?

    /// Keeps `label` as the collection's label.
    /// - Throws: ``KeychainError`` when the backend cannot store it.
    func setCollectionLabel(_ label: String) throws(KeychainError)

    /// Gets now whatever later writes will need from the user (a new vault's passphrase), for a
    /// long-running writer that cannot ask later; the default needs nothing.
    func prepareForWrites() throws(KeychainError)
}

extension DetailedSecretStore {
    public func prepareForWrites() throws(KeychainError) {}

    /// Decided as ``updateItem(at:movingTo:_:)`` and ``deleteItem(at:if:)`` decide (under the
    /// vault's lock, by OpenBao's check-and-set); the item's details are kept.
    public func replaceSecret(service: ServiceName, key: KeychainKey, expected: Data?, with new: Data?)
        throws(KeychainError) -> Bool
    {
        let address = SecretAddress(service: service, key: key)
        guard let expected else {
            guard let new else { return try !containsSecret(service: service, key: key) }
            return try addSecret(new, service: service, key: key)
        }
        guard let new else { return try deleteItem(at: address) { $0.secret == expected } }
        let update = try updateItem(at: address, movingTo: nil) {
            $0.secret == expected ? ItemContents(secret: new, details: $0.details) : nil
        }
        guard case .updated = update else { return false }
        return true
    }

    public func detailedItems(in services: Set<ServiceName>) throws(KeychainError) -> [DetailedItem] {
        try detailedItems().filter { services.contains($0.address.service) }
    }
}
