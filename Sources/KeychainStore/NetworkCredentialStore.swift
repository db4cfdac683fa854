import FoundationEssentials
import KeychainCredentials

/// Where network credentials are kept: the Secret Service's network passwords
/// (``SecretServiceStore``, as git-credential-libsecret keeps them), or the items of one service
/// of any other store (``KeyedNetworkCredentials``). Get one for a store with
/// ``SecretStore/networkCredentials(service:)``.
public protocol NetworkCredentialStore: Sendable {
    /// The stored credential that answers `query` (``NetworkCredential/matches(_:password:)``),
    /// with its password; of several, one with the query's path (or none when it names none)
    /// first, then the first by location. Expired ones too: the caller decides.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    func credential(matching query: NetworkCredential) throws(KeychainError) -> NetworkCredential?

    /// Stores `credential`, replacing the one stored for the same location and user name.
    /// - Throws: ``KeychainError`` when the backend cannot store it.
    func store(_ credential: NetworkCredential) throws(KeychainError)

    /// Removes every stored credential that answers `query`, its password included when it names
    /// one: git erases after a server rejected a password, and a credential stored since with
    /// another password must survive.
    /// - Returns: how many were removed.
    /// - Throws: ``KeychainError`` when the backend cannot answer.
    @discardableResult
    func erase(matching query: NetworkCredential) throws(KeychainError) -> Int
}

extension SecretStore {
    /// The network credentials of this store: by default the items of `service` (``KeyedNetworkCredentials``);
    /// a backend with a place of its own for them (the Secret Service) overrides it.
    public func networkCredentials(service: ServiceName) -> any NetworkCredentialStore {
        KeyedNetworkCredentials(store: self, service: service)
    }
}

/// Network credentials as items of one service of any ``SecretStore`` (the vault, OpenBao): the key
/// is the credential's ``NetworkCredential/location`` (`https://user@host:port/path`), the secret
/// its ``NetworkCredential/storedSecret`` (the password, then expiry and refresh token lines), so
/// that `list`, `get` and `export` show them like any other item.
public struct KeyedNetworkCredentials: NetworkCredentialStore {
    public let store: any SecretStore
    public let service: ServiceName

    public init(store: any SecretStore, service: ServiceName) {
        self.store = store
        self.service = service
    }

    public func credential(matching query: NetworkCredential) throws(KeychainError) -> NetworkCredential? {
        guard var found = try locations(matching: query).first,
            let secret = try store.secret(service: service, key: try KeychainKey(found.location))
        else { return nil }
        found.readStoredSecret(String(decoding: secret, as: UTF8.self))
        return found
    }

    public func store(_ credential: NetworkCredential) throws(KeychainError) {
        try store.setSecret(
            Data(credential.storedSecret.utf8), service: service, key: try KeychainKey(credential.location))
    }

    public func erase(matching query: NetworkCredential) throws(KeychainError) -> Int {
        var erased = 0
        for var credential in try locations(matching: query) {
            let key = try KeychainKey(credential.location)
            if query.password != nil {
                guard let secret = try store.secret(service: service, key: key) else { continue }
                credential.readStoredSecret(String(decoding: secret, as: UTF8.self))
                guard credential.matches(query, password: true) else { continue }
            }
            if try store.deleteSecret(service: service, key: key) { erased += 1 }
        }
        return erased
    }

    /// The stored credentials (without secrets) that answer `query`, in the order
    /// ``credential(matching:)`` prefers them.
    private func locations(matching query: NetworkCredential) throws(KeychainError) -> [NetworkCredential] {
        try store.items(service: service).compactMap { NetworkCredential(location: $0.key) }
            .filter { $0.matches(query) }.sorted(for: query)
    }
}

extension [NetworkCredential] {
    /// Those with the query's path first (``NetworkCredential/hasPath(of:)``), each by location.
    func sorted(for query: NetworkCredential) -> [NetworkCredential] {
        sorted { ($0.hasPath(of: query) ? 0 : 1, $0.location) < ($1.hasPath(of: query) ? 0 : 1, $1.location) }
    }
}
