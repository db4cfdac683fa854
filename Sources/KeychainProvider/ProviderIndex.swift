import FoundationEssentials
import KeychainStore

/// One item as the provider serves it: where its collection's store keeps it, and what clients see.
struct ServedItem: Equatable {
    let number: Int
    var address: SecretAddress
    /// The details the store keeps for it (serve wrote it); nil for an item written without them
    /// (by `keychain-cli set`), which shows ``ProviderIndex/bareDetails(_:)``, made when asked:
    /// kept made, they were 420 bytes an item, 4 MiB of serve's memory at 10,000 items.
    var storedDetails: ItemDetails?
    var created: UInt64
    var modified: UInt64
    /// The store's ``DetailedItem/revision`` when the index last saw the item.
    var revision: Int

    /// What clients see: its attributes, label and type.
    var details: ItemDetails { storedDetails ?? ProviderIndex.bareDetails(address) }

    /// One of ``details``' attributes, without making them.
    func attribute(_ name: String) -> String? {
        guard let storedDetails else { return ProviderIndex.bareAttribute(name, of: address) }
        return storedDetails.attributes[name]
    }

    /// Whether `details`, what the store holds at the item's address now, can be this item's: an
    /// item at the address of one with stored details, without details, is another item, which
    /// another program stored after deleting this one (`set` of an existing item keeps them).
    func isStored(with details: ItemDetails?) -> Bool { details != nil || storedDetails == nil }
}

/// The items of one collection, numbered for their object paths, found by attributes in memory:
/// what answers searches and properties without asking the backend. It is a view: every write
/// decides what it overwrites on what the store holds then (``DetailedSecretStore``).
///
/// Where an item lives in the store follows from its attributes: one with a `service` and a
/// `username` (keychain-cli's and python keyring's schema) is the store's item (service,
/// username), so that `keychain-cli -s S get U` reads it; any other (git's, docker's, a second item
/// with the same service and username) is kept under the service ``otherItemsService`` with a
/// random key.
struct ProviderIndex {
    /// The service of the items whose attributes name no service and username of their own.
    static let otherItemsService = "secret-service"
    /// How the access log names an item about to be created under a new key of
    /// ``otherItemsService``, whose key is drawn as it is stored.
    static let newOtherAddress = SecretAddress(
        service: try! ServiceName(otherItemsService), key: try! KeychainKey("(new)"))

    private(set) var items: [Int: ServedItem] = [:]
    private var numbers: [SecretAddress: Int] = [:]
    private var lastNumber = 0
    /// The numbers of the items by their `service` and `username` attributes, which nearly every
    /// search names (libsecret's lookups of keychain-cli's and python keyring's items, keychain-cli's
    /// own), so that such a search looks at those items only: a scan of every item made a lookup
    /// through serve holding 10,000 items 2 ms slower, most of it copying items (perf).
    private var named: [Name: [Int]] = [:]

    private struct Name: Hashable {
        let service: String
        let username: String

        init?(_ attribute: (String) -> String?) {
            guard let service = attribute("service"), let username = attribute("username") else { return nil }
            (self.service, self.username) = (service, username)
        }
    }

    /// The items whose attributes include every one of `attributes`, oldest first.
    func search(_ attributes: [String: String]) -> [ServedItem] {
        let matches = { (item: ServedItem) in attributes.allSatisfy { item.attribute($0.key) == $0.value } }
        guard let name = Name({ attributes[$0] }) else {
            return items.values.filter(matches).sorted { $0.number < $1.number }
        }
        return (named[name] ?? []).sorted().compactMap { items[$0] }.filter(matches)
    }

    /// Sets (or with nil, removes) the item numbered `number`, keeping ``named`` in step: every
    /// change of ``items`` goes through here.
    private mutating func set(_ number: Int, _ item: ServedItem?) {
        if let old = items[number], let name = Name(old.attribute) {
            named[name]?.removeAll { $0 == number }
            if named[name]?.isEmpty == true { named[name] = nil }
        }
        if let item, let name = Name(item.attribute) { named[name, default: []].append(number) }
        items[number] = item
    }

    /// The store's item an item with `attributes` is: (service, username), when both are there.
    static func nativeAddress(_ attributes: [String: String]) -> SecretAddress? {
        guard let service = attributes["service"].flatMap({ try? ServiceName($0) }),
            let key = attributes["username"].flatMap({ try? KeychainKey($0) })
        else { return nil }
        return SecretAddress(service: service, key: key)
    }

    /// The item kept at `address`, as far as the index knows.
    func holder(of address: SecretAddress) -> ServedItem? { numbers[address].flatMap { items[$0] } }

    /// Where an item with `attributes` would rather be kept (`item`: the item itself, when it
    /// exists): its native address unless another item holds it, as far as the index knows;
    /// else where it is now, when that is under ``otherItemsService``; nil: under a new random key
    /// there.
    func preferredAddress(for attributes: [String: String], of item: ServedItem? = nil) -> SecretAddress? {
        if let native = Self.nativeAddress(attributes), holder(of: native).map({ $0.number == item?.number }) ?? true {
            return native
        }
        if let item, item.address.service.rawValue == Self.otherItemsService { return item.address }
        return nil
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

    /// Puts what the store holds, `entry`, in the index as item `number` (a new number when nil),
    /// keeping the item's creation time when the store did not give one. An item the index held at
    /// the same address is dropped: the store no longer has it, `entry` took its place.
    /// - Returns: the item's number, and the number of the item dropped.
    @discardableResult
    mutating func put(_ entry: DetailedItem, as given: Int? = nil) -> (number: Int, displaced: Int?) {
        let old = given.flatMap { items[$0] }
        if let old { numbers[old.address] = nil }
        var displaced: Int?
        if let holder = numbers[entry.address], holder != given {
            displaced = holder
            set(holder, nil)
        }
        let number = given ?? nextNumber()
        numbers[entry.address] = number
        let now = Date()
        set(
            number,
            ServedItem(
                number: number, address: entry.address, storedDetails: entry.details,
                created: entry.created.map(unixSeconds) ?? old?.created ?? unixSeconds(now),
                modified: unixSeconds(entry.modified ?? now), revision: entry.revision))
        return (number, displaced)
    }

    mutating func remove(_ number: Int) {
        guard let item = items[number] else { return }
        set(number, nil)
        numbers[item.address] = nil
    }

    /// Makes the index what the store holds, keeping the numbers of the items still there; an
    /// item whose details and revision are as the index has them is unchanged (OpenBao dates a
    /// write of one key on every key of its service). With `services`, `listing` holds the items
    /// of those services only, and the index's items of other services are left as they are.
    /// - Returns: the numbers of the items added, changed and removed.
    mutating func replace(with listing: [DetailedItem], within services: Set<ServiceName>? = nil)
        -> (added: [Int], changed: [Int], removed: [Int])
    {
        var added: [Int] = []
        var changed: [Int] = []
        var gone: [Int] = []
        var seen: Set<Int> = []
        for entry in listing {
            if let old = holder(of: entry.address) {
                if old.isStored(with: entry.details) {
                    seen.insert(old.number)
                    let sameDetails =
                        entry.details == old.storedDetails
                        || (entry.details ?? Self.bareDetails(entry.address)) == old.details
                    guard !sameDetails || entry.revision != old.revision else { continue }
                    put(entry, as: old.number)
                    changed.append(old.number)
                    continue
                }
                // Another program deleted it and stored a new item there.
                remove(old.number)
                gone.append(old.number)
            }
            let number = put(entry).number
            seen.insert(number)
            added.append(number)
        }
        let removed = items.filter { number, item in
            !seen.contains(number) && services.map { $0.contains(item.address.service) } != false
        }.map(\.key)
        for number in removed { remove(number) }
        return (added.sorted(), changed.sorted(), (removed + gone).sorted())
    }

    /// What an item written without details (by `keychain-cli set`) shows: the attributes, label
    /// and type keychain-cli's Secret Service backend gives the items it writes.
    static func bareDetails(_ address: SecretAddress) -> ItemDetails {
        ItemDetails(
            attributes: Dictionary(
                uniqueKeysWithValues: bareAttributeNames.map { ($0, bareAttribute($0, of: address)!) }),
            label: ItemInfo.defaultLabel(service: address.service, key: address.key), contentType: "text/plain")
    }

    static let bareAttributeNames = ["service", "username", "application", "xdg:schema"]

    /// The attribute `name` of ``bareDetails(_:)``.
    static func bareAttribute(_ name: String, of address: SecretAddress) -> String? {
        switch name {
        case "service": address.service.rawValue
        case "username": address.key.rawValue
        case "application": "keychain-cli"
        case "xdg:schema": "org.freedesktop.Secret.Generic"
        default: nil
        }
    }

    private mutating func nextNumber() -> Int {
        lastNumber += 1
        return lastNumber
    }
}

/// A collection serve serves: `login`, every item of the backend; or `session`, whose items are
/// kept in memory only and are gone when serve stops, as the specification describes (and
/// gnome-keyring has).
final class ServedCollection {
    static let prefix = "/org/freedesktop/secrets/collection/"
    /// Where clients that use an alias's path directly find a collection (libsecret turns an
    /// alias NAME into /org/freedesktop/secrets/aliases/NAME; python SecretStorage uses `default`'s).
    static let aliasPrefix = "/org/freedesktop/secrets/aliases/"
    static let defaultAliasPath = aliasPrefix + "default"
    /// The aliases: `default` and `login` name the login collection, `session` the session one.
    static let aliases = ["default", "login", "session"]

    let name: String
    let path: String
    let store: any DetailedSecretStore
    var index = ProviderIndex()
    var locked = false
    var label: String
    let created: UInt64

    /// - Parameter label: its label until its store holds one.
    init(name: String, store: any DetailedSecretStore, label: String, created: UInt64) {
        self.name = name
        self.path = Self.prefix + name
        self.store = store
        self.label = label
        self.created = created
    }

    func path(of number: Int) -> String { "\(path)/\(number)" }

    /// Its items' paths, oldest first.
    var itemPaths: [String] { index.items.keys.sorted().map(path(of:)) }

    var modified: UInt64 { index.items.values.map(\.modified).max() ?? created }
}

/// Seconds since 1970, as the Secret Service's Created and Modified properties give them.
func unixSeconds(_ date: Date?) -> UInt64 {
    UInt64(max(0, date?.timeIntervalSince1970 ?? 0))
}
