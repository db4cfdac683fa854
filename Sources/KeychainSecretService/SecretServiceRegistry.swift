internal import CLibSecret
import FoundationEssentials
import KeychainCredentials
import KeychainDBus
import KeychainStore

/// Registry credentials on the Secret Service are docker-credential-secretservice's items:
/// schema `io.docker.Credentials`, label = the server URL, attributes `label=Docker Credentials`,
/// `server` (the URL as docker gives it), `username`, `docker_cli=1`. Each reads the other's.
extension SecretServiceStore: RegistryCredentialStore {
    /// Its own docker items, as the other tools of the field keep them (not those of `service`).
    public func registryCredentials(service: ServiceName) -> any RegistryCredentialStore { self }

    public func registryCredential(for serverURL: String) throws(KeychainError) -> RegistryCredential? {
        try connection.withClient("look up the registry credential", seconds: timeout, preparingSession: true) {
            client in
            // Of several users' items for one server (other tools keep them), the one `list` names:
            // the last found, as docker-credential-secretservice's list and get both answer.
            guard let (attributes, path) = try dockerItems(["server": serverURL], client).last else { return nil }
            guard let secret = try client.readSecret(at: path) else { return nil }
            return RegistryCredential(
                serverURL: serverURL, username: attributes["username"] ?? "",
                secret: String(decoding: secret, as: UTF8.self))
        }
    }

    public func storeRegistryCredential(_ credential: RegistryCredential) throws(KeychainError) {
        let pairs = [
            ("label", "Docker Credentials"), ("server", credential.serverURL), ("username", credential.username),
            ("docker_cli", "1"),
        ]
        let attributes = OwnedAttributes(Dictionary(uniqueKeysWithValues: pairs))
        let schema = String(cString: keychain_cli_docker_schema().pointee.name)
        try connection.withClient("store the registry credential", seconds: timeout, preparingSession: true) {
            client in
            // In our own session where it can be (libsecret's fails on kwalletd5 about once in 100), else
            // secret_password_storev / secret_password_store_finish: each replaces the item with
            // the same attributes.
            let stored = try client.create(
                Data(credential.secret.utf8), attributes: pairs + [("xdg:schema", schema)],
                label: credential.serverURL, contentType: "text/plain")
            if !stored {
                _ = try client.withOperation { operation in
                    try operation.call(
                        { cancellable, callback, data in
                            attributes.use {
                                secret_password_storev(
                                    keychain_cli_docker_schema(), $0, SECRET_COLLECTION_DEFAULT,
                                    credential.serverURL, credential.secret, cancellable, callback, data)
                            }
                        },
                        finish: { secret_password_store_finish($0, $1) })
                }
            }
            // One item per server: one of another user name goes, once the new one is stored.
            let others = try dockerItems(["server": credential.serverURL], client)
                .filter { $0.attributes["username"] != credential.username }.map(\.path)
            if !others.isEmpty { _ = try client.deleteItems(at: others) }
        }
    }

    public func eraseRegistryCredential(for serverURL: String) throws(KeychainError) -> Bool {
        try connection.withClient("erase the registry credential", seconds: timeout) { client in
            let paths = try dockerItems(["server": serverURL], client).map(\.path)
            return try client.deleteItems(at: paths) > 0
        }
    }

    public func registryUsernames() throws(KeychainError) -> [String: String] {
        try connection.withClient("list the registry credentials", seconds: timeout) { client in
            var result: [String: String] = [:]
            for (attributes, _) in try dockerItems([:], client) {
                if let server = attributes["server"] { result[server] = attributes["username"] ?? "" }
            }
            return result
        }
    }

    /// The docker items whose attributes include `pairs` (unlocked first), with their paths:
    /// those of docker's schema only, as docker-credential-secretservice finds them.
    private func dockerItems(_ pairs: [String: String], _ client: SecretServiceClient) throws
        -> [(attributes: [String: String], path: String)]
    {
        try client.findItems(pairs, schema: String(cString: keychain_cli_docker_schema().pointee.name))
    }
}
