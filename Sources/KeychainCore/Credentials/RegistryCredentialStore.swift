#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A container registry's credential, as docker's credential helpers keep it: the server URL
/// exactly as docker gives it, a user name (`<token>` for an identity token) and the secret.
public struct RegistryCredential: Hashable, Sendable, Codable {
    public var serverURL: String
    public var username: String
    public var secret: String

    public init(serverURL: String, username: String, secret: String) {
        self.serverURL = serverURL
        self.username = username
        self.secret = secret
    }

    enum CodingKeys: String, CodingKey {
        case serverURL = "ServerURL"
        case username = "Username"
        case secret = "Secret"
    }

    /// Reads the JSON docker sends; a field left out is empty, as docker-credential-helpers'
    /// own decoder reads it (the caller decides whether an empty one will do).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        serverURL = try container.decodeIfPresent(String.self, forKey: .serverURL) ?? ""
        username = try container.decodeIfPresent(String.self, forKey: .username) ?? ""
        secret = try container.decodeIfPresent(String.self, forKey: .secret) ?? ""
    }
}

/// Where registry credentials are kept: the Secret Service's `io.docker.Credentials` items
/// (``SecretServiceStore``, as docker-credential-secretservice keeps them), or the items of one
/// service of any other store (``KeyedRegistryCredentials``). Get one with
/// ``registryCredentials(in:service:)``.
public protocol RegistryCredentialStore: Sendable {
    /// The credential stored for exactly `serverURL`, or nil.
    func registryCredential(for serverURL: String) throws -> RegistryCredential?
    /// Stores `credential`, replacing any stored for its server URL.
    func storeRegistryCredential(_ credential: RegistryCredential) throws
    /// Removes the credential stored for `serverURL`; false when there was none.
    func eraseRegistryCredential(for serverURL: String) throws -> Bool
    /// Every stored server URL with its user name.
    func registryUsernames() throws -> [String: String]
}

/// The registry credentials of `store`: the Secret Service's docker items, or on another backend
/// the items of `service` (see ``KeyedRegistryCredentials``).
public func registryCredentials(in store: any SecretStore, service: ServiceName) -> any RegistryCredentialStore {
    if let secretService = store as? SecretServiceStore { return secretService }
    return KeyedRegistryCredentials(store: store, service: service)
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

    public func registryCredential(for serverURL: String) throws -> RegistryCredential? {
        guard let data = try store.secret(service: service, key: try KeychainKey(serverURL)) else { return nil }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: data) else {
            throw KeychainError.invalidData(
                key: serverURL, reason: "is not a registry credential ({\"Username\": …, \"Secret\": …})")
        }
        return RegistryCredential(serverURL: serverURL, username: stored.username, secret: stored.secret)
    }

    public func storeRegistryCredential(_ credential: RegistryCredential) throws {
        let data = try JSONEncoder().encode(Stored(username: credential.username, secret: credential.secret))
        try store.setSecret(data, service: service, key: try KeychainKey(credential.serverURL))
    }

    public func eraseRegistryCredential(for serverURL: String) throws -> Bool {
        try store.deleteSecret(service: service, key: try KeychainKey(serverURL))
    }

    public func registryUsernames() throws -> [String: String] {
        var result: [String: String] = [:]
        for item in try store.items(service: service) {
            if let credential = try? registryCredential(for: item.key) { result[item.key] = credential.username }
        }
        return result
    }
}
