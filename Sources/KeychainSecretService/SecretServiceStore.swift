internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

/// A ``SecretStore`` on the freedesktop Secret Service (gnome-keyring, KeePassXC, KWallet, `serve`).
///
/// Reads, writes, lists and deletes call the Secret Service's D-Bus API directly, on a session
/// bus connection the store keeps (our own where the bus is a Unix socket, else GDBus's: one
/// client written for both, SecretServiceClient.swift), and secrets travel encrypted in a
/// ``SecretSession`` the store opens on its first read or write and keeps. libsecret unlocks
/// locked items and keyrings, creates a missing default keyring and shows prompts.
///
/// Items are written with the attributes `service`, `username` (the key) and
/// `application=keychain-cli` under the schema `org.freedesktop.Secret.Generic`, and found by
/// `service` and `username` alone, so items of secret-tool, python keyring, go-keyring and
/// keyring-rs are read and written too. Every wait is bounded by ``timeout``: an unanswered
/// unlock prompt becomes ``KeychainError/timedOut(operation:seconds:)``, never a hang.
public final class SecretServiceStore: SecretStore {
    /// How long an operation waits for the Secret Service to answer, in seconds. The limit restarts
    /// at every answer, so long operations that keep progressing (a reset of thousands of items)
    /// finish, while an unanswered prompt or a stalled keyring ends in ``KeychainError/timedOut(operation:seconds:)``.
    public let timeout: Double
    /// What ``items(service:)`` reads of each item.
    public let listing: ListingDetail
    /// The bus, the kept session and libsecret's proxy, and the queries on them.
    let connection = SecretServiceConnection()

    /// The object path of the session kept on the direct connection (for tests).
    @_spi(Testing) public var keptSessionPath: String? { connection.direct.withLock { $0?.slot.session?.path } }
    /// Whether an OpenSession was sent on the direct connection and not yet answered (for tests).
    @_spi(Testing) public var hasSessionOnItsWay: Bool { connection.direct.withLock { $0?.slot.opening != nil } }
    /// The bus address of the direct connection, if one is open (for tests).
    @_spi(Testing) public var directBusAddress: String? { connection.direct.withLock { $0?.address } }

    /// Closes the kept session on the service but keeps it here, as a restarted service would
    /// have forgotten it (for tests: the service lets only the connection that opened a session
    /// close it).
    @_spi(Testing) public func closeKeptSessionOnTheService() throws {
        guard let path = keptSessionPath else { return }
        _ = try connection.onDirectBus(what: "close the session", seconds: timeout) { bus in
            // org.freedesktop.Secret.Session.Close() -> ()
            let close = try bus.wire.send(
                SecretServiceConnection.busName, path, "org.freedesktop.Secret.Session", "Close", [])
            _ = try SecretServiceConnection.values(of: bus.wire.answer(close), on: bus.wire)
        }
    }

    /// A store whose operations give up when the Secret Service has not answered for `timeout` seconds.
    public init(timeout: Double = defaultStoreTimeout, listing: ListingDetail = .full) {
        self.timeout = timeout
        self.listing = listing
    }

    public func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        try connection.withClient("return the secret", seconds: timeout, preparingSession: true) {
            try $0.lookup([("service", service.rawValue), ("username", key.rawValue)])
        }
    }

    /// A search only: no encrypted session, and an item in a locked keyring counts without
    /// unlocking it.
    public func containsSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try connection.withClient("look for the item", seconds: timeout) {
            let found = try $0.searchPaths([("service", service.rawValue), ("username", key.rawValue)])
            return !found.unlocked.isEmpty || !found.locked.isEmpty
        }
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        // On whichever connection the client takes (SecretServiceClient.swift), which unlocks
        // and performs prompts through libsecret; where it says libsecret must (no default
        // collection, no encrypted session), libsecret's store, which creates one.
        let stored = try connection.withClient("store the secret", seconds: timeout, preparingSession: true) {
            try $0.store(
                secret, replacing: [("service", service.rawValue), ("username", key.rawValue)],
                attributes: newItemAttributes(service: service, key: key),
                label: ItemInfo.defaultLabel(service: service, key: key), contentType: "application/octet-stream")
        }
        if !stored { try storeThroughLibsecret(secret, service: service, key: key) }
    }

    /// The attributes of an item `set` creates, as libsecret's store gives them for our schema
    /// (`xdg:schema` its name), on either way to the bus.
    func newItemAttributes(service: ServiceName, key: KeychainKey) -> [(String, String)] {
        [
            ("service", service.rawValue), ("username", key.rawValue), ("application", "keychain-cli"),
            ("xdg:schema", String(cString: connection.schema.pointee.name)),
        ]
    }

    /// Stores `secret` through libsecret, for a provider without an encrypted session or a
    /// default collection: every item found under `service` and `key` gets it in place, else a
    /// new item of the default collection (which libsecret creates, with a prompt).
    private func storeThroughLibsecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        let value = OwnedSecretValue(secret, contentType: "application/octet-stream")
        try BoundedOperation.run("store the secret", seconds: timeout) { operation in
            let libsecret = try connection.connect(operation, openSession: true)
            try connection.search(operation, libsecret, ["service": service.rawValue, "username": key.rawValue]) {
                existing in
                var updated = 0
                for item in existing {
                    // secret_item_set_secret / secret_item_set_secret_finish; an item another
                    // client deleted since the search is skipped.
                    let done = try operation.call(
                        { cancellable, callback, data in
                            value.use { secret_item_set_secret(item, $0, cancellable, callback, data) }
                        },
                        finish: { result, error in
                            secret_item_set_secret_finish(item, result, error) != 0 || !clearingVanishedItemError(error)
                        })
                    guard done else { continue }
                    updated += 1
                    try announceSecretChanged(item, operation)
                }
                if updated == 0 {
                    try storeNew(value, service: service, key: key, libsecret, operation)
                }
            }
        }
    }

    /// Stores `value` as a new item of the default collection through libsecret.
    private func storeNew(
        _ value: OwnedSecretValue, service: ServiceName, key: KeychainKey, _ libsecret: OwnedObject,
        _ operation: BoundedOperation
    ) throws {
        let attributes = OwnedAttributes([
            "service": service.rawValue, "username": key.rawValue, "application": "keychain-cli",
        ])
        let label = ItemInfo.defaultLabel(service: service, key: key)
        try libsecret.use(as: SecretService.self) { proxy in
            // secret_service_store / secret_service_store_finish
            _ = try operation.call(
                { cancellable, callback, data in
                    withExtendedLifetime((attributes, value)) {
                        secret_service_store(
                            proxy, connection.schema, attributes.raw, SECRET_COLLECTION_DEFAULT, label, value.raw,
                            cancellable, callback, data)
                    }
                },
                finish: { secret_service_store_finish(proxy, $0, $1) })
        }
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try deleteMatching([("service", service.rawValue), ("username", key.rawValue)], what: "delete the secret") > 0
    }

    /// Removes the items ``items(service:)`` lists for `service`, and no other: an item of another
    /// application with a `service` attribute but no `username` (node keytar's `account`, say) is
    /// neither listed nor deleted.
    public func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        try deleteMatching([("service", service.rawValue)], requiring: "username", what: "delete the service's secrets")
    }

    public func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        try listing(service: service).items
    }

    /// The items, and the object paths they were found at (``ListedPaths``), for
    /// ``secrets(of:listedIn:)``.
    public func listing(service: ServiceName?) throws(KeychainError) -> ItemListing {
        let pairs = service.map { [("service", $0.rawValue)] } ?? []
        return try connection.withClient("list the items", seconds: timeout) { client in
            // libsecret builds a D-Bus proxy per found item and refuses an empty search; asking
            // for the paths, then for every item's properties in pipelined Properties calls on the
            // same connection, costs one round trip per window and gnome-keyring's own time per
            // item (less for Attributes alone than for GetAll); one GetManagedObjects call where
            // the provider answers it (keychain-cli serve). Numbers: bench/RESULTS.md.
            let found = try client.searchVisiblePaths(pairs)
            let paths = found.unlocked + found.locked
            let infos = try client.infos(paths, keysOnly: listing == .keysOnly)
            return ItemListing(
                items: infos.compactMap { $0 },
                found: ListedPaths(paths: paths, infos: infos, locked: Set(found.locked)))
        }
    }

    /// Deletes every item whose attributes include `pairs`, and the attribute `requiring` when one
    /// is named (unlocking locked ones first), with pipelined Item.Delete calls: one proxy and one
    /// round trip per item was far slower for a large service. Items another client deleted
    /// meanwhile are not counted.
    private func deleteMatching(_ pairs: [(String, String)], requiring: String? = nil, what: String)
        throws(KeychainError) -> Int
    {
        try connection.withClient(what, seconds: timeout) { client in
            var found = try client.searchVisiblePaths(pairs)
            if let requiring {
                // The Secret Service searches by value only: read each item's attributes to keep
                // those that have the attribute at all.
                func having(_ paths: [String]) throws -> [String] {
                    let attributes = try client.itemProperties(["Attributes"], of: paths)
                    return zip(paths, attributes).compactMap { $1?[0]?.stringMap?[requiring] != nil ? $0 : nil }
                }
                found = (try having(found.unlocked), try having(found.locked))
            }
            let unlocked = try client.unlockAll(found.locked, what: "items to delete are")
            return try client.deleteItems(at: found.unlocked + unlocked)
        }
    }
}
