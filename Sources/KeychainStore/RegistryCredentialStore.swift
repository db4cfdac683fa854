import FoundationEssentials
import KeychainCredentials

/// Where registry credentials are kept: the Secret Service's `io.docker.Credentials` items
/// (``SecretServiceStore``, as docker-credential-secretservice keeps them), or the items of one
/// service of any other store (``KeyedRegistryCredentials``). Get one with
/// ``SecretStore/registryCredentials(service:)``.
public protocol RegistryCredentialStore: Sendable {
    /// The credential stored for exactly `serverURL`, or nil.
    func registryCredential(for serverURL: String) throws(KeychainError) -> RegistryCredential?
    /// Stores `credential`, replacing any stored for its server URL.
    func storeRegistryCredential(_ credential: RegistryCredential) throws(KeychainError)
    /// Removes the credential stored for `serverURL`; false when there was none.
    func eraseRegistryCredential(for serverURL: String) throws(KeychainError) -> Bool
    /// Every stored server URL with its user name.
    func registryUsernames() throws(KeychainError) -> [String: String]
}

extension SecretStore {
    /// The registry credentials of this store: by default the items of `service` (``KeyedRegistryCredentials``);
    /// a backend with a place of its own for them (the Secret Service) overrides it.
    public func registryCredentials(service: ServiceName) -> any RegistryCredentialStore {
        KeyedRegistryCredentials(store: self, service: service)
    }
}

/// Registry credentials as items of one service of any ``SecretStore``: the key is the server URL,
/// the secret a JSON object `{"Username": …, "Secret": …}`.
public struct KeyedRegistryCredentials: RegistryCredentialStore {
    public let store: any SecretStore
    public let service: ServiceName

    public init(store: any SecretStore, service: ServiceName) {
        self.store = store
        self.service = service
    }

    private struct Stored: Codable {
        var username: String
        var secret: String
        enum CodingKeys: String, CodingKey {
            case username = "Username"
            case secret = "Secret"
        }
    }

    public func registryCredential(for serverURL: String) throws(KeychainError) -> RegistryCredential? {
        guard let data = try store.secret(service: service, key: try KeychainKey(serverURL)) else { return nil }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: data) else {
            throw KeychainError.invalidData(
                key: serverURL, reason: "is not a registry credential ({\"Username\": …, \"Secret\": …})")
        }
        return RegistryCredential(serverURL: serverURL, username: stored.username, secret: stored.secret)
    }

    public func storeRegistryCredential(_ credential: RegistryCredential) throws(KeychainError) {
        let data: Data
        do {
            data = try JSONEncoder().encode(Stored(username: credential.username, secret: credential.secret))
        } catch {
            throw .invalidData(key: credential.serverURL, reason: "cannot be written as JSON")
        }
        try store.setSecret(data, service: service, key: try KeychainKey(credential.serverURL))
    }

    public func eraseRegistryCredential(for serverURL: String) throws(KeychainError) -> Bool {
        try store.deleteSecret(service: service, key: try KeychainKey(serverURL))
    }

    public func registryUsernames() throws(KeychainError) -> [String: String] {
        var result: [String: String] = [:]
        for item in try store.items(service: service) {
            if let credential = try? registryCredential(for: item.key) { result[item.key] = credential.username }
        }
        return result
    }
}
