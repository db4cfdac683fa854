import FoundationEssentials

/// The seam between the engine and a storage backend.
///
/// Every backend (``SecretServiceStore``, ``InMemorySecretStore``) implements it; everything above
/// it (``Keychain``, the command-line tool) is written against it alone. Implementations are
/// thread-safe, throw only ``KeychainError`` (typed throws: every store alike), and treat a
/// missing item as a normal answer (`nil`, `false`, `0`), never as an error.
public protocol SecretStore: Sendable {
    /// The secret stored under `service` and `key`, or `nil` when there is none.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data?

    /// Stores `secret` under `service` and `key`, replacing any secret already there.
    /// - Throws: ``KeychainError`` when the backend cannot store it; the old secret is then kept.
    func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError)

    /// Removes the item stored under `service` and `key`.
    /// - Returns: `false` when there was no such item.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool

    /// Metadata of the items of `service`, or of every service when `service` is `nil`,
    /// in no particular order. Never reads or returns secrets.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo]

    /// Removes every item of `service` and no other.
    /// - Returns: how many items were removed.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func deleteAll(service: ServiceName) throws(KeychainError) -> Int

    /// Stores each of `secrets` as ``setSecret(_:service:key:)`` does, in order. A backend that
    /// can store them in one step does (the vault writes its file once, so either all are stored
    /// or none); the default stores one at a time.
    /// - Parameter progress: told how many are stored so far.
    /// - Throws: ``KeychainError`` when the backend cannot store one; those before it may be stored.
    func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError)

    /// The secrets of many items at once, in the order of `addresses` (nil for an item that is
    /// not there): what `export` reads. The Secret Service asks for them in a few calls
    /// (`GetSecrets`) instead of a search and a read per item; the default reads one at a time.
    /// - Throws: ``KeychainError`` when the backend cannot read one.
    func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?]

    /// ``items(service:)``, with what the store found the items by, for a read of them right
    /// after (``secrets(of:listedIn:)``); the default keeps nothing.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func listing(service: ServiceName?) throws(KeychainError) -> ItemListing

    /// ``secrets(of:)`` of items `listing` (this store's, made just before) found: the Secret
    /// Service reads the items at the paths the listing found instead of finding them again,
    /// and looks afresh for one gone since; the default ignores the listing.
    /// - Throws: ``KeychainError`` when the backend cannot read one.
    func secrets(of addresses: [SecretAddress], listedIn listing: ItemListing) throws(KeychainError) -> [Data?]

    /// Whether an item is stored under `service` and `key`, reading as little as the backend
    /// allows: the Secret Service only searches (no encrypted session, no unlock prompt, even for
    /// an item in a locked keyring); the default reads the secret and drops it (the vault must
    /// decrypt its file to see its keys; OpenBao returns a secret's fields together).
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func containsSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool

    /// Stores `secret` under `service` and `key` only if nothing is stored there: false, and
    /// nothing written, when something is. The vault decides under its write lock and OpenBao by
    /// check-and-set, so that of two writers only one adds; the default (the Secret Service)
    /// checks (``containsSecret(service:key:)``), then stores, so that two writers at the same
    /// moment may both store (the last one wins).
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool

    /// Stores each of `secrets` only where nothing is stored under its service and key (nor
    /// under an earlier one of `secrets`), decided as ``addSecret(_:service:key:)`` decides it:
    /// the vault under its write lock, in one write (all of them or none); OpenBao by
    /// check-and-set on each service's secret; the default adds one at a time.
    /// - Parameter progress: told how many are done so far, added or not.
    /// - Returns: for each of `secrets`, in order, whether it was added.
    /// - Throws: ``KeychainError`` when the backend cannot answer; those before may be added.
    func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool]

    /// Stores `new` under `service` and `key` (removes the item when `new` is nil) only if what is
    /// stored there now is `expected` (nothing, when nil): what `edit` writes, and `mv` removes,
    /// so that a change another writer made since the caller read is never overwritten. The vault
    /// decides under its write lock, OpenBao by check-and-set; the default (the Secret Service,
    /// which has neither) reads, compares, then writes, so that a writer in between may be lost.
    /// A secret written keeps the item's label and details.
    /// - Returns: false, and nothing written, when what is stored is not `expected`.
    /// - Throws: ``KeychainError`` when the backend cannot answer or store it.
    func replaceSecret(service: ServiceName, key: KeychainKey, expected: Data?, with new: Data?)
        throws(KeychainError) -> Bool

    /// The label, attributes and content type of the item under `service` and `key` where the
    /// backend keeps them (the Secret Service, and a store that keeps ``ItemDetails``); nil for
    /// an item without, or a backend that keeps none (the default): what `cp` and `mv` carry.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func itemDetails(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemDetails?

    /// Stores `secret` under `service` and `key` with `details` (nil: as ``setSecret(_:service:key:)``
    /// stores it; a backend that keeps no details ignores them) and the item's `dates` where the
    /// backend lets a writer give them (the vault's; the Secret Service and OpenBao date items
    /// themselves): replacing what is there when `replacing`, else only where nothing is, decided
    /// as ``addSecret(_:service:key:)`` decides.
    /// - Returns: false, and nothing written, when not `replacing` and something is there.
    /// - Throws: ``KeychainError`` when the backend cannot store it.
    func storeSecret(
        _ secret: Data, details: ItemDetails?, dates: ItemDates, service: ServiceName, key: KeychainKey,
        replacing: Bool
    ) throws(KeychainError) -> Bool

    /// The metadata of the item under `service` and `key` (never its secret), nil when there is
    /// none; the default finds it in ``items(service:)``, a tree vault reads that item alone.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func item(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemInfo?

    /// Throws when the backend could not store an item under `service` and `key` (a tree vault's
    /// file name too long, a key OpenBao's details reserve), so that a caller with many (`import`)
    /// refuses before its first write; the default allows every name.
    /// - Throws: ``KeychainError/invalidName(kind:reason:)``.
    func checkName(service: ServiceName, key: KeychainKey) throws(KeychainError)

    /// Whether ``setSecrets(_:progress:)`` and ``addSecrets(_:progress:)`` write all they are
    /// given in one step that holds every item of the store (the vault's file): a caller with a
    /// great many then gives them at once; to any other store it may give them a batch at a time,
    /// holding only one batch. The default is false.
    var writesManyAtOnce: Bool { get }

    /// Starts reporting the changes to the items of `service` (of every service when nil), made by
    /// any program, this one included, until the returned watch is cancelled or a failure is
    /// reported (the last report). Each backend watches as well as it can: the Secret Service's
    /// signals, the vault file's notifications, OpenBao's versions; the default polls.
    /// - Parameters:
    ///   - interval: seconds between two looks where the backend must be asked (polling).
    ///   - report: called on the watcher's own thread, one event at a time, in order.
    /// - Throws: ``KeychainError`` when the backend cannot be watched at all.
    func watch(service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void)
        throws(KeychainError)
        -> StoreWatch

    /// Where git's credentials are kept: the Secret Service keeps them as its network passwords
    /// (as git-credential-libsecret does); the default keeps them as items of `service`
    /// (``KeyedNetworkCredentials``).
    func networkCredentials(service: ServiceName) -> any NetworkCredentialStore

    /// Where docker's registry credentials are kept: the Secret Service keeps them as
    /// `io.docker.Credentials` items (as docker-credential-secretservice does); the default keeps
    /// them as items of `service` (``KeyedRegistryCredentials``).
    func registryCredentials(service: ServiceName) -> any RegistryCredentialStore
}

/// How long a store waits for its backend when no time limit is given, in seconds.
public let defaultStoreTimeout = 5.0

/// How much a listing (``SecretStore/items(service:)``) reads of each item, where the backend
/// can read less for less.
public enum ListingDetail: Sendable {
    /// Key, service, application, label and dates.
    case full
    /// Key, service and application only (`label`, `created`, `modified` are nil): gnome-keyring
    /// answers this in about half the time per item, which is most of the cost of a long list;
    /// OpenBao skips the metadata request that gives the dates.
    case keysOnly
}

/// One secret for ``SecretStore/setSecrets(_:progress:)`` or ``SecretStore/addSecrets(_:progress:)``.
public struct SecretToStore: Sendable {
    public var service: ServiceName
    public var key: KeychainKey
    public var secret: Data

    public init(service: ServiceName, key: KeychainKey, secret: Data) {
        self.service = service
        self.key = key
        self.secret = secret
    }
}

/// Where an item is: its service and key.
public struct SecretAddress: Hashable, Sendable {
    public var service: ServiceName
    public var key: KeychainKey

    public init(service: ServiceName, key: KeychainKey) {
        self.service = service
        self.key = key
    }
}

/// What one listing found (``SecretStore/listing(service:)``): the items, and the store's own
/// record of where it found them, which only that store reads.
public struct ItemListing: Sendable {
    /// The items, as ``SecretStore/items(service:)`` gives them.
    public let items: [ItemInfo]
    /// The store's record (the Secret Service: the items' object paths); nil when it keeps none.
    package let found: (any Sendable)?

    package init(items: [ItemInfo], found: (any Sendable)? = nil) {
        self.items = items
        self.found = found
    }

    /// The same listing with its items in another order.
    package func with(items: [ItemInfo]) -> ItemListing { ItemListing(items: items, found: found) }
}

extension SecretStore {
    public var writesManyAtOnce: Bool { false }

    public func checkName(service: ServiceName, key: KeychainKey) throws(KeychainError) {}

    public func item(service: ServiceName, key: KeychainKey) throws(KeychainError) -> ItemInfo? {
        try items(service: service).first { $0.key == key.rawValue }
    }

    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        try addresses.map { (address) throws(KeychainError) in try secret(service: address.service, key: address.key) }
    }

    public func listing(service: ServiceName?) throws(KeychainError) -> ItemListing {
        ItemListing(items: try items(service: service))
    }

    public func secrets(of addresses: [SecretAddress], listedIn listing: ItemListing) throws(KeychainError)
        -> [Data?]
    {
        try secrets(of: addresses)
    }

    public func containsSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try secret(service: service, key: key) != nil
    }

    public func replaceSecret(service: ServiceName, key: KeychainKey, expected: Data?, with new: Data?)
        throws(KeychainError) -> Bool
    {
        try replaceSecretByComparing(service, key, expected, new)
    }

    /// ``replaceSecret(service:key:expected:with:)`` as a store without check-and-set does it:
    /// reads, compares, then writes.
    package func replaceSecretByComparing(_ service: ServiceName, _ key: KeychainKey, _ expected: Data?, _ new: Data?)
        throws(KeychainError) -> Bool
    {
        guard expected != nil else {
            guard let new else { return try !containsSecret(service: service, key: key) }
            return try addSecret(new, service: service, key: key)
        }
        guard try secret(service: service, key: key) == expected else { return false }
        guard let new else { return try deleteSecret(service: service, key: key) }
        try setSecret(new, service: service, key: key)
        return true
    }

    public func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        guard try !containsSecret(service: service, key: key) else { return false }
        try setSecret(secret, service: service, key: key)
        return true
    }

    public func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        for (index, item) in secrets.enumerated() {
            try setSecret(item.secret, service: item.service, key: item.key)
            progress(index + 1)
        }
    }

    public func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        var added: [Bool] = []
        for item in secrets {
            added.append(try addSecret(item.secret, service: item.service, key: item.key))
            progress(added.count)
        }
        return added
    }
}

/// What `list --json` shows about an item: never its secret.
public struct ItemInfo: Hashable, Sendable, Codable {
    /// The service (namespace) of the item.
    public var service: String
    /// The key of the item inside its service.
    public var key: String
    /// The human-readable label, as keyring managers show it; nil when the backend was not asked
    /// for it (``ListingDetail/keysOnly``).
    public var label: String?
    /// The program that wrote the item, when it recorded one (`keychain-cli`, `Python keyring library`).
    public var application: String?
    /// When the item was created, when the backend knows.
    public var created: Date?
    /// When the item's secret was last changed, when the backend knows.
    public var modified: Date?

    public init(
        service: String, key: String, label: String?, application: String? = nil,
        created: Date? = nil, modified: Date? = nil
    ) {
        self.service = service
        self.key = key
        self.label = label
        self.application = application
        self.created = created
        self.modified = modified
    }

    /// The label keychain-cli gives the items it writes, e.g. `ci/github-token (keychain-cli)`.
    public static func defaultLabel(service: ServiceName, key: KeychainKey) -> String {
        "\(service.rawValue)/\(key.rawValue) (keychain-cli)"
    }
}
