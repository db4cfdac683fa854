internal import CLibSecret
import FoundationEssentials
import KeychainCredentials
import KeychainDBus
import KeychainStore

/// Network credentials on the Secret Service are its network passwords, as git-credential-libsecret
/// writes them: schema `org.gnome.keyring.NetworkPassword`, attributes `protocol`, `server`,
/// `port` (when there is one), `object` (the path) and `user`. They are looked up by those
/// attributes alone, so upstream git's `org.git.Password` items (expiry and refresh token appended
/// to the secret) are found too.
extension SecretServiceStore: NetworkCredentialStore {
    /// Its own network password items, as the other tools of the field keep them (not those of `service`).
    public func networkCredentials(service: ServiceName) -> any NetworkCredentialStore { self }

    public func credential(matching query: NetworkCredential) throws(KeychainError) -> NetworkCredential? {
        try connection.withClient("look up the credential", seconds: timeout, preparingSession: true) { client in
            guard let (found, path) = try matchingItems(query, client).first else { return nil }
            var credential = found
            guard let secret = try client.readSecret(at: path) else { return nil }
            credential.readStoredSecret(String(decoding: secret, as: UTF8.self))
            return credential
        }
    }

    public func store(_ credential: NetworkCredential) throws(KeychainError) {
        let pairs = Self.attributes(of: credential)
        let attributes = OwnedAttributes(pairs)
        var label = "\(credential.protocol)://\(credential.host)" + (credential.port.map { ":\($0)" } ?? "")
        label += "/" + (credential.path ?? "")
        let secret = credential.storedSecret
        let schema = String(cString: keychain_cli_network_schema().pointee.name)
        try connection.withClient("store the credential", seconds: timeout, preparingSession: true) { client in
            // In our own session where it can be (libsecret's fails on kwalletd5 about once in 100).
            let stored = try client.create(
                Data(secret.utf8), attributes: pairs.sorted { $0.key < $1.key } + [("xdg:schema", schema)],
                label: label, contentType: "text/plain")
            guard !stored else { return }
            // secret_password_storev / secret_password_store_finish: replaces the item with the
            // same attributes, as git-credential-libsecret does.
            _ = try client.withOperation { operation in
                try operation.call(
                    { cancellable, callback, data in
                        attributes.use {
                            secret_password_storev(
                                keychain_cli_network_schema(), $0, SECRET_COLLECTION_DEFAULT, label, secret,
                                cancellable, callback, data)
                        }
                    },
                    finish: { secret_password_store_finish($0, $1) })
            }
        }
    }

    public func erase(matching query: NetworkCredential) throws(KeychainError) -> Int {
        try connection.withClient("erase the credential", seconds: timeout) { client in
            var paths = try matchingItems(query, client).map(\.path)
            if query.password != nil {
                // Only those whose password is the query's (git's reject of a rejected password).
                paths = try paths.filter { path in
                    guard let secret = try client.readSecret(at: path) else { return false }
                    var stored = query
                    stored.readStoredSecret(String(decoding: secret, as: UTF8.self))
                    return stored.password == query.password
                }
            }
            return try client.deleteItems(at: paths)
        }
    }

    /// The network-password items that answer `query` (unlocked first, which may prompt within the
    /// deadline), with their object paths, in the order ``credential(matching:)`` prefers them.
    /// Found by their attributes alone, whatever their schema (git-credential-libsecret's
    /// `org.gnome.keyring.NetworkPassword`, upstream git's `org.git.Password`).
    private func matchingItems(_ query: NetworkCredential, _ client: SecretServiceClient) throws
        -> [(credential: NetworkCredential, path: String)]
    {
        var pairs = Self.attributes(of: query)
        // A query without port or path must not exclude items that have one: filtered below.
        pairs.removeValue(forKey: "port")
        pairs.removeValue(forKey: "object")
        return try client.findItems(pairs).compactMap { item -> (NetworkCredential, String)? in
            guard let credential = Self.credential(attributes: item.attributes), credential.matches(query)
            else { return nil }
            return (credential, item.path)
        }.sorted {
            ($0.0.hasPath(of: query) ? 0 : 1, $0.0.location) < ($1.0.hasPath(of: query) ? 0 : 1, $1.0.location)
        }
    }

    static func attributes(of credential: NetworkCredential) -> [String: String] {
        var pairs = ["protocol": credential.protocol, "server": credential.host]
        if let port = credential.port { pairs["port"] = "\(port)" }
        if let path = credential.path, !path.isEmpty { pairs["object"] = path }
        if let username = credential.username { pairs["user"] = username }
        return pairs
    }

    static func credential(attributes: [String: String]) -> NetworkCredential? {
        guard let scheme = attributes["protocol"], let host = attributes["server"] else { return nil }
        return NetworkCredential(
            protocol: scheme, host: host, port: attributes["port"].flatMap { Int($0) }.flatMap { $0 == 0 ? nil : $0 },
            path: attributes["object"].flatMap { $0.isEmpty ? nil : $0 }, username: attributes["user"])
    }
}
