import CLibSecret
import FoundationEssentials

/// Registry credentials on the Secret Service are docker-credential-secretservice's items:
/// schema `io.docker.Credentials`, label = the server URL, attributes `label=Docker Credentials`,
/// `server` (the URL as docker gives it), `username`, `docker_cli=1`. Each reads the other's.
extension SecretServiceStore: RegistryCredentialStore {
    /// Its own docker items, as the other tools of the field keep them (not those of `service`).
    public func registryCredentials(service: ServiceName) -> any RegistryCredentialStore { self }

    public func registryCredential(for serverURL: String) throws(KeychainError) -> RegistryCredential? {
        try BoundedOperation.run("look up the registry credential", seconds: timeout) { operation in
            guard let (attributes, path) = try dockerItems(["server": serverURL], operation).first else { return nil }
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            guard let secret = try readSecret(at: path, operation, bus) else { return nil }
            return RegistryCredential(
                serverURL: serverURL, username: attributes["username"] ?? "",
                secret: String(decoding: secret, as: UTF8.self))
        }
    }

    public func storeRegistryCredential(_ credential: RegistryCredential) throws(KeychainError) {
        let attributes = makeAttributes([
            "label": "Docker Credentials", "server": credential.serverURL, "username": credential.username,
            "docker_cli": "1",
        ])
        defer { g_hash_table_unref(attributes) }
        try BoundedOperation.run("store the registry credential", seconds: timeout) { operation in
            // secret_password_storev / secret_password_store_finish: replaces the item with the
            // same attributes.
            _ = try operation.call(
                {
                    secret_password_storev(
                        keychain_cli_docker_schema(), attributes, SECRET_COLLECTION_DEFAULT, credential.serverURL,
                        credential.secret, $0, $1, $2)
                },
                finish: { secret_password_store_finish($0, $1) })
            // One item per server: one of another user name goes, once the new one is stored.
            let others = try dockerItems(["server": credential.serverURL], operation)
                .filter { $0.attributes["username"] != credential.username }.map(\.path)
            guard !others.isEmpty else { return }
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            _ = try deleteItems(at: others, operation, bus)
        }
    }

    public func eraseRegistryCredential(for serverURL: String) throws(KeychainError) -> Bool {
        try BoundedOperation.run("erase the registry credential", seconds: timeout) { operation in
            let paths = try dockerItems(["server": serverURL], operation).map(\.path)
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            return try deleteItems(at: paths, operation, bus) > 0
        }
    }

    public func registryUsernames() throws(KeychainError) -> [String: String] {
        try BoundedOperation.run("list the registry credentials", seconds: timeout) { operation in
            var result: [String: String] = [:]
            for (attributes, _) in try dockerItems([:], operation) {
                if let server = attributes["server"] { result[server] = attributes["username"] ?? "" }
            }
            return result
        }
    }

    /// The docker items whose attributes include `pairs` (unlocked first), with their paths.
    private func dockerItems(_ pairs: [String: String], _ operation: BoundedOperation) throws
        -> [(attributes: [String: String], path: String)]
    {
        let connection = try connect(operation, openSession: false)
        defer { g_object_unref(connection) }
        return try search(operation, connection, pairs, schema: keychain_cli_docker_schema()) { items in
            items.map { (itemAttributes($0), itemPath($0)) }
        }
    }
}

/// The attributes of a libsecret item.
func itemAttributes(_ item: UnsafeMutablePointer<SecretItem>) -> [String: String] {
    let table = secret_item_get_attributes(item)
    defer { g_hash_table_unref(table) }
    var result: [String: String] = [:]
    var iterator = GHashTableIter()
    g_hash_table_iter_init(&iterator, table)
    var key: gpointer?
    var value: gpointer?
    while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
        if let key, let value {
            result[String(cString: key.assumingMemoryBound(to: CChar.self))] = String(
                cString: value.assumingMemoryBound(to: CChar.self))
        }
    }
    return result
}

/// The D-Bus object path of a libsecret item.
func itemPath(_ item: UnsafeMutablePointer<SecretItem>) -> String {
    String(
        cString: g_dbus_proxy_get_object_path(UnsafeMutableRawPointer(item).assumingMemoryBound(to: GDBusProxy.self)))
}
