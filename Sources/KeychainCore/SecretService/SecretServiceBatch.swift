import CLibSecret

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Many secrets in a few calls: one search per service, the items' attributes in pipelined
// Properties calls, then `Service.GetSecrets` for a thousand items at a time. Asked item by item
// (a search and a GetSecret each, one after the other) gnome-keyring spends about 780 µs per item
// at 1,000 items; GetSecrets costs it about 110 µs per item.
extension SecretServiceStore {
    /// How many items one `GetSecrets` call asks for.
    static let secretsPerCall = 1_000

    public func secrets(of addresses: [SecretAddress]) throws -> [Data?] {
        guard !addresses.isEmpty else { return [] }
        return try BoundedOperation.run("read the secrets", seconds: timeout) { operation in
            let bus = try sessionBus(operation, preparingSession: true)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            var candidates: [String] = []
            var locked: [String] = []
            for service in Set(addresses.map(\.service)).sorted() {
                let found = try searchPaths(operation, bus, ["service": service.rawValue])
                candidates += found.unlocked
                locked += found.locked
            }
            if !locked.isEmpty {
                let unlocked = try unlock(locked, operation)
                guard unlocked.count == locked.count else {
                    throw KeychainError.locked(detail: "some items are in a locked keyring that could not be unlocked")
                }
                candidates += unlocked
            }
            // The first item found for each address, as a lookup returns it.
            let wanted = Set(addresses)
            var paths: [SecretAddress: String] = [:]
            for (path, info) in zip(candidates, try infos(operation, bus, candidates, keysOnly: true)) {
                guard let info, let service = try? ServiceName(info.service), let key = try? KeychainKey(info.key)
                else { continue }
                let address = SecretAddress(service: service, key: key)
                if wanted.contains(address) && paths[address] == nil { paths[address] = path }
            }
            let needed = Array(Set(paths.values))
            let secrets =
                try inSession(operation, bus) { session in try getSecrets(needed, in: session, operation, bus) }
                ?? Dictionary(
                    uniqueKeysWithValues: try needed.compactMap { path in
                        try readSecretThroughLibsecret(at: path, operation).map { (path, $0) }
                    })
            return addresses.map { paths[$0].flatMap { secrets[$0] } }
        }
    }

    /// The secrets of the items at `paths` (an item gone or locked meanwhile is left out), in
    /// `Service.GetSecrets` calls of ``secretsPerCall`` items.
    private func getSecrets(
        _ paths: [String], in session: SecretSession, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> [String: Data] {
        var secrets: [String: Data] = [:]
        for start in stride(from: 0, to: paths.count, by: Self.secretsPerCall) {
            let chunk = paths[start..<min(start + Self.secretsPerCall, paths.count)]
            let items = chunk.map { g_variant_new_object_path($0) }
            // org.freedesktop.Secret.Service.GetSecrets(ao items, o session) -> (a{o(oayays)} secrets)
            let reply = try operation.callMethod(
                bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets",
                g_variant_new_tuple(
                    [
                        g_variant_new_array(keychain_cli_type_object_path(), items, gsize(items.count)),
                        g_variant_new_object_path(session.path),
                    ], 2),
                replyType: keychain_cli_type_get_secrets_reply(), meanwhile: session.deriveKey)
            defer { g_variant_unref(reply) }
            let entries = g_variant_get_child_value(reply, 0)!
            defer { g_variant_unref(entries) }
            for index in 0..<Int(g_variant_n_children(entries)) {
                let entry = g_variant_get_child_value(entries, gsize(index))!
                defer { g_variant_unref(entry) }
                let secret = g_variant_get_child_value(entry, 1)!
                defer { g_variant_unref(secret) }
                secrets[variantString(entry, child: 0)] = try session.open(secret)
            }
        }
        return secrets
    }
}
