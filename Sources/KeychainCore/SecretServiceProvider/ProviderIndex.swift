import FoundationEssentials

/// One item as the provider serves it: where the backend keeps it, and what clients see.
struct ServedItem: Equatable {
    let number: Int
    var address: SecretAddress
    var details: ItemDetails
    var created: UInt64
    var modified: UInt64
}

/// The items the provider serves, numbered for their object paths, found by attributes in memory:
/// what answers searches and properties without asking the backend.
///
/// Where an item lives in the backend follows from its attributes: one with a `service` and a
/// `username` (keychain-cli's and python keyring's schema) is the backend's item (service,
/// username), so that `keychain-cli -s S get U` reads it; any other (git's, docker's, a second item
/// with the same service and username) is kept under the service ``otherItemsService`` with a
/// random key.
struct ProviderIndex {
    static let collectionPath = "/org/freedesktop/secrets/collection/login"
    static let aliasPath = "/org/freedesktop/secrets/aliases/default"
    /// The service of the items whose attributes name no service and username of their own.
    static let otherItemsService = "secret-service"

    private(set) var items: [Int: ServedItem] = [:]
    private var numbers: [SecretAddress: Int] = [:]
    private var lastNumber = 0

    static func path(of number: Int) -> String { "\(collectionPath)/\(number)" }

    /// The item at `path`, under the collection or its alias.
    func item(at path: String) -> ServedItem? {
        for prefix in [Self.collectionPath, Self.aliasPath] where path.hasPrefix(prefix + "/") {
            return Int(path.dropFirst(prefix.count + 1)).flatMap { items[$0] }
        }
        return nil
    }

    /// The items whose attributes include every one of `attributes`, oldest first.
    func search(_ attributes: [String: String]) -> [ServedItem] {
        items.values.filter { item in attributes.allSatisfy { item.details.attributes[$0.key] == $0.value } }
            .sorted { $0.number < $1.number }
    }

    /// The backend's item an item with `attributes` is: (service, username), when both are there.
    static func nativeAddress(_ attributes: [String: String]) -> SecretAddress? {
        guard let service = attributes["service"].flatMap({ try? ServiceName($0) }),
            let key = attributes["username"].flatMap({ try? KeychainKey($0) })
        else { return nil }
        return SecretAddress(service: service, key: key)
    }

    /// The item kept at `address`, if any.
    func holder(of address: SecretAddress) -> ServedItem? { numbers[address].flatMap { items[$0] } }

    /// Where an item with `attributes` is kept (`item`: the item itself, when it exists): its
    /// native address when no other item holds it; else where it is now, under
    /// ``otherItemsService``; else a new random key there.
    func placement(for attributes: [String: String], of item: ServedItem? = nil) -> SecretAddress {
        if let native = Self.nativeAddress(attributes), holder(of: native).map({ $0.number == item?.number }) ?? true {
            return native
        }
        if let item, item.address.service.rawValue == Self.otherItemsService { return item.address }
        return otherAddress()
    }

    /// A new random key under ``otherItemsService``.
    func otherAddress() -> SecretAddress {
        var random = SystemRandomNumberGenerator()
        while true {
            let key = String(random.next() as UInt64, radix: 16)
            // A name always valid: non-empty, short, no NUL.
            let address = SecretAddress(service: try! ServiceName(Self.otherItemsService), key: try! KeychainKey(key))
            if numbers[address] == nil { return address }
        }
    }

    /// Adds or replaces the item at `address`, numbering a new one (or giving it `number`);
    /// returns its number.
    @discardableResult
    mutating func put(
        address: SecretAddress, details: ItemDetails, created: UInt64, modified: UInt64, number given: Int? = nil
    ) -> Int {
        let number = given ?? numbers[address] ?? nextNumber()
        numbers[address] = number
        items[number] = ServedItem(
            number: number, address: address, details: details, created: created, modified: modified)
        return number
    }

    mutating func remove(_ number: Int) {
        guard let item = items.removeValue(forKey: number) else { return }
        numbers[item.address] = nil
    }

    /// Makes the index what the backend holds, keeping the numbers of the items still there.
    /// - Returns: the numbers of the items added, changed and removed.
    mutating func replace(with listing: [DetailedItem]) -> (added: [Int], changed: [Int], removed: [Int]) {
        var added: [Int] = []
        var changed: [Int] = []
        var seen: Set<Int> = []
        for entry in listing {
            let details = entry.details ?? Self.bareDetails(entry.address)
            let created = unixSeconds(entry.created)
            let modified = unixSeconds(entry.modified ?? entry.created)
            let old = numbers[entry.address].flatMap { items[$0] }
            let number = put(address: entry.address, details: details, created: created, modified: modified)
            seen.insert(number)
            if old == nil {
                added.append(number)
            } else if old != items[number] {
                changed.append(number)
            }
        }
        let removed = items.keys.filter { !seen.contains($0) }
        for number in removed { remove(number) }
        return (added.sorted(), changed.sorted(), removed.sorted())
    }

    /// What an item written without details (by `keychain-cli set`) shows: the attributes, label
    /// and type keychain-cli's Secret Service backend gives the items it writes.
    static func bareDetails(_ address: SecretAddress) -> ItemDetails {
        ItemDetails(
            attributes: [
                "service": address.service.rawValue, "username": address.key.rawValue, "application": "keychain-cli",
                "xdg:schema": "org.freedesktop.Secret.Generic",
            ],
            label: ItemInfo.defaultLabel(service: address.service, key: address.key), contentType: "text/plain")
    }

    private mutating func nextNumber() -> Int {
        lastNumber += 1
        return lastNumber
    }
}

/// Seconds since 1970, as the Secret Service's Created and Modified properties give them.
func unixSeconds(_ date: Date?) -> UInt64 {
    UInt64(max(0, date?.timeIntervalSince1970 ?? 0))
}
