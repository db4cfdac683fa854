import FoundationEssentials
import KeychainStore
import KeychainSystem

/// The secrets of one service, read and written through a ``SecretStore``.
///
/// Reads are cache-aside: the first read of a key asks the backend, later reads of the same key
/// are served from memory until this instance writes, deletes or resets that key (or
/// ``removeCachedSecrets()`` is called). While the instance watches (``watch(pollingEvery:_:)``,
/// ``changes(pollingEvery:)``), every change another program makes removes its key from the cache;
/// otherwise their writes are not seen while a value is cached (create a new `Keychain`, or clear
/// the cache, to read them). All methods are thread-safe.
///
/// ```swift
/// let keychain = try Keychain(service: "my-app")          // the desktop's Secret Service
/// try keychain.set("s3cr3t", for: KeychainKey("api-token"))
/// let token = try keychain.string(for: KeychainKey("api-token"))
/// ```
public final class Keychain: Sendable {
    /// The largest secret accepted, in bytes. Larger secrets are refused, never truncated.
    public static let maximumSecretSize = KeychainStore.maximumSecretSize

    /// The service whose items this instance reads and writes.
    public let service: ServiceName
    /// The backend.
    public let store: any SecretStore

    private struct Cache {
        /// Copies of the secrets read, owned by the cache alone (a reader gets a `Data` of its
        /// own), so that forgetting one overwrites the cache's only copy.
        var secrets: [KeychainKey: [UInt8]] = [:]
        // Bumped by every write so that a read racing a write never caches the older value.
        var generation = 0

        mutating func forget(_ key: KeychainKey) {
            guard var secret = secrets.removeValue(forKey: key) else { return }
            wipe(&secret)
        }

        mutating func forgetAll() {
            for key in Array(secrets.keys) { forget(key) }
        }
    }

    private let cache = Locked(Cache())
    /// The backend's watch and its subscribers (see KeychainChanges.swift).
    let watching = Locked(Watching())
    /// Held while the backend's watch starts, so that two subscribers start one.
    let watchStart = Locked(())

    /// A keychain for `service` on `store`.
    public init(service: ServiceName, store: any SecretStore) {
        self.service = service
        self.store = store
    }

    /// A watch still running when the instance goes away is stopped, not left running.
    deinit {
        watching.withLock { $0.watch }?.cancel()
        cache.withLock { $0.forgetAll() }
    }

    /// A keychain for the service named `service` on `store`.
    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when `service` is not a valid name.
    public convenience init(service: String, store: any SecretStore) throws {
        self.init(service: try ServiceName(service), store: store)
    }

    // MARK: Reading

    /// The secret stored under `key`, or `nil` when there is none.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    public func data(for key: KeychainKey) throws -> Data? {
        let (cached, generation) = cache.withLock { ($0.secrets[key], $0.generation) }
        if let cached { return Data(cached) }
        guard let secret = try store.secret(service: service, key: key) else { return nil }
        cache.withLock {
            if $0.generation == generation { $0.secrets[key] = Array(secret) }
        }
        return secret
    }

    /// Whether a secret is stored under `key`, without reading it where the backend allows (see
    /// ``SecretStore/containsSecret(service:key:)``); a cached secret answers at once.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    public func exists(_ key: KeychainKey) throws -> Bool {
        if cache.withLock({ $0.secrets[key] != nil }) { return true }
        return try store.containsSecret(service: service, key: key)
    }

    /// `keychain[key]`: the secret stored under `key`, as ``data(for:)``. Throws, never hides an error.
    public subscript(key: KeychainKey) -> Data? {
        get throws { try data(for: key) }
    }

    /// `keychain[string: key]`: the secret as UTF-8 text, as ``string(for:)``.
    public subscript(string key: KeychainKey) -> String? {
        get throws { try string(for: key) }
    }

    /// `keychain[key, as: T.self]`: the secret decoded from JSON, as ``value(_:for:)``.
    public subscript<T: Decodable>(key: KeychainKey, as type: T.Type) -> T? {
        get throws { try value(type, for: key) }
    }

    /// The secret stored under `key` as UTF-8 text, or `nil` when there is none.
    /// - Throws: ``KeychainError/notText(key:)`` when the secret is not valid UTF-8 (read it as
    ///   bytes with ``data(for:)``),
    ///   or any ``KeychainError`` of ``data(for:)``.
    public func string(for key: KeychainKey) throws -> String? {
        guard let data = try data(for: key) else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw KeychainError.notText(key: key.rawValue)
        }
        return text
    }

    /// The secret stored under `key` decoded from JSON as `type`, or `nil` when there is none.
    /// - Throws: ``KeychainError/invalidData(key:reason:)`` when it does not decode as `type`,
    ///   or any ``KeychainError`` of ``data(for:)``.
    public func value<T: Decodable>(_ type: T.Type, for key: KeychainKey) throws -> T? {
        guard let data = try data(for: key) else { return nil }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch {
            throw KeychainError.invalidData(
                key: key.rawValue, reason: "does not decode as \(T.self). Store it again with set(value:for:)")
        }
    }

    // MARK: Writing

    /// Stores `secret` under `key`, replacing any secret there.
    /// - Throws: ``KeychainError/secretTooLarge(limit:)`` above ``maximumSecretSize``,
    ///   or any ``KeychainError`` of the backend.
    public func set(_ secret: Data, for key: KeychainKey) throws {
        guard secret.count <= Self.maximumSecretSize else {
            throw KeychainError.secretTooLarge(limit: Self.maximumSecretSize)
        }
        defer { invalidate(key) }
        try recordingEchoes(of: [key], [.created, .changed]) {
            (try store.setSecret(secret, service: service, key: key), 1)
        }
    }

    /// Stores `secret` under `key` only if nothing is stored there (see
    /// ``SecretStore/addSecret(_:service:key:)`` for which backends decide that atomically).
    /// - Returns: false, and nothing stored, when a secret is already there.
    /// - Throws: as ``set(_:for:)-(Data,_)``.
    public func add(_ secret: Data, for key: KeychainKey) throws -> Bool {
        guard secret.count <= Self.maximumSecretSize else {
            throw KeychainError.secretTooLarge(limit: Self.maximumSecretSize)
        }
        defer { invalidate(key) }
        return try recordingEchoes(of: [key], [.created]) {
            let added = try store.addSecret(secret, service: service, key: key)
            return (added, added ? 1 : 0)
        }
    }

    /// Stores `text` as UTF-8 under `key`.
    /// - Throws: see ``set(_:for:)-(Data,_)``.
    public func set(_ text: String, for key: KeychainKey) throws {
        try set(Data(text.utf8), for: key)
    }

    /// Stores `value` encoded as JSON under `key`.
    /// - Throws: ``KeychainError/invalidData(key:reason:)`` when `value` does not encode,
    ///   or see ``set(_:for:)-(Data,_)``.
    public func set<T: Encodable>(value: T, for key: KeychainKey) throws {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw KeychainError.invalidData(key: key.rawValue, reason: "could not be encoded as JSON: \(error)")
        }
        try set(data, for: key)
    }

    /// Stores `secrets`, of this service or any other, through this keychain's backend in as
    /// few steps as it allows (the vault: one write, all or nothing), and forgets cached secrets.
    /// - Parameter progress: told how many are stored so far.
    /// - Throws: ``KeychainError/secretTooLarge(limit:)`` before anything is stored when one is
    ///   above ``maximumSecretSize``, or any ``KeychainError`` of the backend.
    public func storeAll(_ secrets: [SecretToStore], progress: (Int) -> Void = { _ in }) throws {
        try writingMany(secrets, [.created, .changed]) { mine in
            (try store.setSecrets(secrets, progress: progress), mine.count)
        }
    }

    /// Stores each of `secrets`, of this service or any other, only where nothing is stored under
    /// its service and key, decided by the backend as ``add(_:for:)`` decides it (the vault: one
    /// write, all or nothing), and forgets cached secrets.
    /// - Parameter progress: told how many are done so far, added or not.
    /// - Returns: for each of `secrets`, in order, whether it was added.
    /// - Throws: see ``storeAll(_:progress:)``.
    public func addAll(_ secrets: [SecretToStore], progress: (Int) -> Void = { _ in }) throws -> [Bool] {
        try writingMany(secrets, [.created]) { _ in
            let added = try store.addSecrets(secrets, progress: progress)
            return (added, zip(secrets, added).filter { $1 && $0.service == self.service }.count)
        }
    }

    /// What ``storeAll(_:progress:)`` and ``addAll(_:progress:)`` share: no secret over
    /// ``maximumSecretSize`` reaches the backend, their own watch events are expected (`write`
    /// gets this service's keys among `secrets` and says how many events it made), and cached
    /// secrets are forgotten.
    private func writingMany<Result>(
        _ secrets: [SecretToStore], _ kinds: Set<StoreChange.Kind>,
        _ write: (Set<KeychainKey>) throws -> (Result, changes: Int)
    ) throws -> Result {
        guard secrets.allSatisfy({ $0.secret.count <= Self.maximumSecretSize }) else {
            throw KeychainError.secretTooLarge(limit: Self.maximumSecretSize)
        }
        defer { removeCachedSecrets() }
        let mine = Set(secrets.lazy.filter { $0.service == self.service }.map(\.key))
        return try recordingEchoes(of: mine, kinds) { try write(mine) }
    }

    /// Stores `new` under `key` (removes the item when nil) only if what is stored there now is
    /// `expected` (nothing, when nil), as ``SecretStore/replaceSecret(service:key:expected:with:)``
    /// decides it.
    /// - Returns: false, and nothing written, when what is stored is not `expected`.
    /// - Throws: ``KeychainError/secretTooLarge(limit:)`` above ``maximumSecretSize``, or any
    ///   ``KeychainError`` of the backend.
    public func replace(_ key: KeychainKey, expected: Data?, with new: Data?) throws -> Bool {
        if let new, new.count > Self.maximumSecretSize {
            throw KeychainError.secretTooLarge(limit: Self.maximumSecretSize)
        }
        defer { invalidate(key) }
        let kinds: Set<StoreChange.Kind> = new == nil ? [.deleted] : expected == nil ? [.created] : [.changed]
        return try recordingEchoes(of: [key], kinds) {
            let replaced = try store.replaceSecret(service: service, key: key, expected: expected, with: new)
            return (replaced, replaced ? 1 : 0)
        }
    }

    /// Removes the item stored under `key`.
    /// - Returns: `false` when there was no such item.
    /// - Throws: any ``KeychainError`` of the backend.
    @discardableResult
    public func delete(_ key: KeychainKey) throws -> Bool {
        defer { invalidate(key) }
        return try recordingEchoes(of: [key], [.deleted]) {
            let deleted = try store.deleteSecret(service: service, key: key)
            return (deleted, deleted ? 1 : 0)
        }
    }

    /// Removes every item of this service (and of no other).
    /// - Returns: how many items were removed.
    /// - Throws: any ``KeychainError`` of the backend.
    @discardableResult
    public func reset() throws -> Int {
        defer { removeCachedSecrets() }
        return try recordingEchoes(of: nil, [.deleted]) {
            let count = try store.deleteAll(service: service)
            return (count, count)
        }
    }

    // MARK: Listing

    /// Metadata of this service's items, sorted by key. Never reads secrets.
    /// - Throws: any ``KeychainError`` of the backend.
    public func items() throws -> [ItemInfo] {
        try store.items(service: service).sorted { $0.key < $1.key }
    }

    /// Metadata of the item under `key` (its label, dates), nil when there is none. Never reads
    /// the secret where the backend can avoid it.
    /// - Throws: any ``KeychainError`` of the backend.
    public func item(_ key: KeychainKey) throws -> ItemInfo? {
        try store.item(service: service, key: key)
    }

    /// Metadata of the items of every service in the backend, sorted by service, then key.
    /// - Throws: any ``KeychainError`` of the backend.
    public func itemsOfAllServices() throws -> [ItemInfo] {
        try store.items(service: nil).sorted { ($0.service, $0.key) < ($1.service, $1.key) }
    }

    /// ``items()`` (or ``itemsOfAllServices()``), with what the backend found them by, for a
    /// read of many of them right after (``SecretStore/secrets(of:listedIn:)``).
    /// - Throws: any ``KeychainError`` of the backend.
    public func listing(ofAllServices: Bool = false) throws -> ItemListing {
        let listing = try store.listing(service: ofAllServices ? nil : service)
        return listing.with(items: listing.items.sorted { ($0.service, $0.key) < ($1.service, $1.key) })
    }

    // MARK: Cache

    /// Forgets every cached secret, overwriting the cache's copies, so the next reads ask the
    /// backend again. (A `Keychain` going away does the same.)
    public func removeCachedSecrets() {
        cache.withLock {
            $0.forgetAll()
            $0.generation += 1
        }
    }

    func invalidate(_ key: KeychainKey) {
        cache.withLock {
            $0.forget(key)
            $0.generation += 1
        }
    }
}
