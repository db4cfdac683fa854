import FoundationEssentials
import KeychainStore

// What `cp` and `mv` carry from and to a Secret Service item: its label and attributes. The
// Secret Service dates its items itself, and keeps a secret's content type only with the secret.
extension SecretServiceStore {
    /// The first item found under `service` and `key`, from a search for it alone (the default
    /// would list every item of the service: `cp -r` and `show` ask once per item).
    public func item(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemInfo? {
        try connection.withClient("read the item", seconds: timeout) { client in
            let found = try client.searchVisiblePaths([("service", service.rawValue), ("username", key.rawValue)])
            guard let path = (found.unlocked + found.locked).first else { return nil }
            return try client.infos([path], keysOnly: false).first ?? nil
        }
    }

    /// The label and attributes of the first item found under `service` and `key` (its content
    /// type `text/plain`: the Secret Service gives it only with the secret).
    public func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails? {
        try connection.withClient("read the item's label and attributes", seconds: timeout) { client in
            let found = try client.searchVisiblePaths([("service", service.rawValue), ("username", key.rawValue)])
            guard let path = (found.unlocked + found.locked).first,
                let values = try client.itemProperties(["Attributes", "Label"], of: [path]).first ?? nil,
                let attributes = values[0]?.stringMap
            else { return nil }
            guard case .string(let label) = values[1] else { return nil }
            return ItemDetails(attributes: attributes, label: label, contentType: "text/plain")
        }
    }

    /// A new item with the details' label and attributes (`service` and `username` those of the
    /// address), or the secret stored in every item found there when `replacing`. Not replacing,
    /// the service is searched first and the item created after: the Secret Service has no
    /// check-and-set, so two writers at the same moment may both store.
    public func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool {
        guard let details else { return try storeSecret(secret, service: service, key: key, replacing: replacing) }
        if !replacing, try containsSecret(service: service, key: key) { return false }
        let pairs = [("service", service.rawValue), ("username", key.rawValue)]
        var attributes = details.attributes.filter { $0.key != "service" && $0.key != "username" }.map {
            ($0.key, $0.value)
        }
        attributes.sort { $0.0 < $1.0 }
        let stored = try connection.withClient("store the secret", seconds: timeout, preparingSession: true) {
            try $0.store(
                secret, replacing: pairs, attributes: pairs + attributes, label: details.label,
                contentType: details.contentType)
        }
        if !stored { try setSecret(secret, service: service, key: key) }
        return true
    }

    /// A removal takes only the items that hold `expected` (another tool's item under the same
    /// service and key with another secret stays); a write is ``SecretStore``'s default, read,
    /// compare, write: the Secret Service has no check-and-set, so a writer in between may be lost.
    public func replaceSecret(service: ServiceName, key: KeychainKey, expected: Data?, with new: Data?)
        throws(KeychainError) -> Bool
    {
        guard let expected, new == nil else { return try replaceSecretByComparing(service, key, expected, new) }
        return try connection.withClient("delete the secret", seconds: timeout, preparingSession: true) { client in
            let found = try client.searchVisiblePaths([("service", service.rawValue), ("username", key.rawValue)])
            let paths = found.unlocked + (try client.unlockAll(found.locked, what: "the item is"))
            let holding = try paths.filter { try client.readSecret(at: $0) == expected }
            return try !holding.isEmpty && client.deleteItems(at: holding) > 0
        }
    }
}
