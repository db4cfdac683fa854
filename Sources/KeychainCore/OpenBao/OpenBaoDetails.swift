import FoundationEssentials

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

    public func detailedItems() throws(KeychainError) -> [DetailedItem] {
        var items: [DetailedItem] = []
        for service in try secretPaths() {
            let secret = try read(service)
            // KV keeps one creation time per secret (service), the date its keys all show.
            let created = try creationDate(service)
            for field in secret.fields.keys where !Self.isDetailsField(field) {
                guard let key = try? KeychainKey(field) else { continue }
                items.append(
                    DetailedItem(
                        address: SecretAddress(service: service, key: key), details: secret.details(of: field),
                        created: created, modified: secret.modified))
            }
        }
        return items
    }

    public func setSecret(_ secret: Data, details: ItemDetails, service: ServiceName, key: KeychainKey)
        throws(KeychainError)
    {
        try Self.refuseReserved(key)
        let object: JSONValue = .object([
            "attributes": .object(details.attributes.mapValues { .string($0) }), "label": .string(details.label),
            "contentType": .string(details.contentType),
        ])
        try write(service, [key.rawValue: KVValue.encode(secret), Self.detailsField(key.rawValue): object])
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
