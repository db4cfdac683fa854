import FoundationEssentials

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
