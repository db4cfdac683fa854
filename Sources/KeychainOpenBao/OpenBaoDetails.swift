import FoundationEssentials
import KeychainStore
import KeychainSystem

// OpenBao keeps an item's Secret Service details (serve) in a field beside the item's own, in the
// same secret: `KEY` holds the secret as always (`bao kv get -field=KEY` reads it), and
// `keychain-cli:details:KEY` an object of its attributes, label and content type. Both are
// written in one request, and one read of a service gives every key's details.
extension OpenBaoStore: DetailedSecretStore {
    /// The start of the fields that hold details: no key of keychain-cli's own may start so.
    public static let detailsPrefix = "keychain-cli:details:"

    static func detailsField(_ key: String) -> String { detailsPrefix + key }
    static func isDetailsField(_ field: String) -> Bool { field.hasPrefix(detailsPrefix) }

    static func refuseReserved(_ key: KeychainKey) throws(KeychainError) {
        guard isDetailsField(key.rawValue) else { return }
        throw .invalidName(kind: "key", reason: "keys starting with '\(detailsPrefix)' hold the details serve keeps")
    }

    /// The secrets with one read per service (a service's keys come together), not one per key.
    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        var read: [ServiceName: KVSecret] = [:]
        var secrets: [Data?] = []
        for address in addresses {
            if read[address.service] == nil { read[address.service] = try self.read(address.service) }
            secrets.append(read[address.service]?.fields[address.key.rawValue].map(KVValue.decode))
        }
        return secrets
    }

    /// The items of every secret of the mount the token may read: a secret its policy denies, or
    /// whose answer does not decode, is left out rather than failing the whole listing (serve on
    /// a mount shared with other teams).
    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        try detailedItems(in: Set(try secretPaths()))
    }

    /// One read of each service's secret (and its metadata), not a listing of every service.
    public func detailedItems(in services: Set<ServiceName>) throws(KeychainError) -> [DetailedItem] {
        var items: [DetailedItem] = []
        for service in services.sorted() {
            guard let secret = try readableSecret(service) else { continue }
            // KV keeps one creation time per secret (service), the date its keys all show.
            let created = try creationDate(service)
            for (field, value) in secret.fields where !Self.isDetailsField(field) {
                guard let key = try? KeychainKey(field) else { continue }
                items.append(
                    DetailedItem(
                        address: SecretAddress(service: service, key: key), details: secret.details(of: field),
                        created: created, modified: secret.modified, revision: Self.revision(of: value)))
            }
        }
        return items
    }

    /// From one read of the service's secret (no metadata request).
    public func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails? {
        try readableSecret(service)?.details(of: key.rawValue)
    }

    @discardableResult
    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError) -> DetailedItem
    {
        try Self.refuseReserved(key)
        let changes = Self.fields(key.rawValue, ItemContents(secret: secret, details: details))
        let version = try write(service, changes)
        return Self.written(SecretAddress(service: service, key: key), changes, version, created: nil)
    }

    /// Decided by check-and-set on the service's secret as the server holds it.
    public func addItem(_ secret: Data, details: ItemDetails, at address: SecretAddress) throws(KeychainError)
        -> DetailedItem?
    {
        try Self.refuseReserved(address.key)
        let key = address.key.rawValue
        let changes = Self.fields(key, ItemContents(secret: secret, details: details))
        guard let version = try checkAndSet(address.service, { $0[key] == nil ? changes : nil }) else { return nil }
        return Self.written(address, changes, version, created: version.created)
    }

    /// Within a service, one check-and-set; between two, the destination is added first and the
    /// item removed after, unless another writer changed it meanwhile; a removal that fails
    /// undoes the addition, so that a failed update changes nothing.
    public func updateItem(
        at address: SecretAddress, movingTo destination: SecretAddress?, _ change: (ItemContents) -> ItemContents?
    ) throws(KeychainError) -> ItemUpdate {
        let target = destination ?? address
        try Self.refuseReserved(target.key)
        let (key, newKey) = (address.key.rawValue, target.key.rawValue)
        guard target.service != address.service else {
            var outcome = ItemUpdate.missing
            var written: [String: JSONValue] = [:]
            let version = try checkAndSet(address.service) { fields in
                guard let value = fields[key] else {
                    outcome = .missing
                    return nil
                }
                guard newKey == key || fields[newKey] == nil else {
                    outcome = .destinationTaken
                    return nil
                }
                let contents = ItemContents(
                    secret: KVValue.decode(value), details: KVSecret(fields: fields).details(of: key))
                guard let new = change(contents) else {
                    outcome = .missing
                    return nil
                }
                written = Self.fields(newKey, new)
                return newKey == key ? written : written.merging(Self.removal(key)) { new, _ in new }
            }
            guard let version else { return outcome }
            return .updated(Self.written(target, written, version, created: nil))
        }
        let source = try read(address.service)
        guard let value = source.fields[key] else { return .missing }
        let detailsValue = source.fields[Self.detailsField(key)]
        guard let new = change(ItemContents(secret: KVValue.decode(value), details: source.details(of: key))) else {
            return .missing
        }
        let written = Self.fields(newKey, new)
        guard let version = try checkAndSet(target.service, { $0[newKey] == nil ? written : nil }) else {
            return .destinationTaken
        }
        do {
            // Removed only as it was read: a value another writer stored since stays theirs.
            try checkAndSet(address.service) { fields in
                fields[key] == value && fields[Self.detailsField(key)] == detailsValue ? Self.removal(key) : nil
            }
        } catch {
            _ = try? checkAndSet(target.service) { fields in
                fields[newKey] == written[newKey] ? Self.removal(newKey) : nil
            }
            throw error
        }
        return .updated(Self.written(target, written, version, created: nil))
    }

    /// The service's secret, or nil when the token may not read it or its answer does not decode.
    func readableSecret(_ service: ServiceName) throws(KeychainError) -> KVSecret? {
        do {
            return try read(service)
        } catch .serverDenied, .openBao(.noToken), .openBao(.loginRefused), .invalidData {
            return nil
        }
    }

    /// The collection's label is kept as the details of no key (a field no item has, hidden as
    /// every details field is) in the secret of the service `secret-service`.
    static let labelService = "secret-service"

    public func collectionLabel() throws(KeychainError) -> String? {
        guard case .object(let object) = try read(try ServiceName(Self.labelService)).fields[Self.detailsPrefix],
            case .string(let label) = object["label"]
        else { return nil }
        return label
    }

    public func setCollectionLabel(_ label: String) throws(KeychainError) {
        try write(try ServiceName(Self.labelService), [Self.detailsPrefix: .object(["label": .string(label)])])
    }

    /// Decided by check-and-set on the service's secret as the server holds it.
    public func deleteItem(at address: SecretAddress, if matches: (ItemContents) -> Bool) throws(KeychainError)
        -> Bool
    {
        let key = address.key.rawValue
        return try checkAndSet(address.service) { fields in
            guard let value = fields[key] else { return nil }
            let contents = ItemContents(
                secret: KVValue.decode(value), details: KVSecret(fields: fields).details(of: key))
            return matches(contents) ? Self.removal(key) : nil
        } != nil
    }

    /// The fields that hold `contents` under `key`: the secret, and its details (removed when nil).
    static func fields(_ key: String, _ contents: ItemContents) -> [String: JSONValue] {
        [key: KVValue.encode(contents.secret), detailsField(key): contents.details.map(detailsObject) ?? .null]
    }

    /// The changes that remove `key` and its details.
    static func removal(_ key: String) -> [String: JSONValue] { [key: .null, detailsField(key): .null] }

    static func detailsObject(_ details: ItemDetails) -> JSONValue {
        .object([
            "attributes": .object(details.attributes.mapValues { .string($0) }), "label": .string(details.label),
            "contentType": .string(details.contentType),
        ])
    }

    /// The item a write of `fields` made, as ``detailedItems()`` will list it.
    static func written(_ address: SecretAddress, _ fields: [String: JSONValue], _ version: KVVersion, created: Date?)
        -> DetailedItem
    {
        let key = address.key.rawValue
        return DetailedItem(
            address: address, details: KVSecret(fields: fields).details(of: key), created: created,
            modified: version.created, revision: fields[key].map(revision(of:)) ?? 0)
    }

    /// A digest of the secret a field holds (every byte of it), which storing the same value
    /// again keeps: OpenBao dates versions of the whole service, not its fields.
    static func revision(of value: JSONValue) -> Int {
        var hasher = Hasher()
        KVValue.decode(value).withUnsafeBytes { hasher.combine(bytes: $0) }
        return hasher.finalize()
    }
}

extension OpenBaoStore.KVSecret {
    /// The details kept for `key`, if its details field is one this version wrote.
    func details(of key: String) -> ItemDetails? {
        guard case .object(let object) = fields[OpenBaoStore.detailsField(key)],
            case .object(let attributes) = object["attributes"], case .string(let label) = object["label"],
            case .string(let contentType) = object["contentType"]
        else { return nil }
        var strings: [String: String] = [:]
        for case (let name, .string(let value)) in attributes { strings[name] = value }
        return ItemDetails(attributes: strings, label: label, contentType: contentType)
    }
}
