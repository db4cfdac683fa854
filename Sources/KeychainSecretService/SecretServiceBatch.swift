import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

// Many secrets in a few calls: the items' paths, then `Service.GetSecrets` for a thousand items
// at a time. Asked item by item (a search and a GetSecret each, one after the other)
// gnome-keyring spends several times longer per item than GetSecrets costs it.
//
// The paths come from the listing just made when the caller gives it (`export` lists the items,
// asks, then reads them): finding them again costs a search per service and every item's attributes,
// which for thousands of items is most of gnome-keyring's time (it looks each item up among all
// of them).
extension SecretServiceStore {
    /// How many items one `GetSecrets` call asks for.
    static let secretsPerCall = 1_000

    /// What one listing found, as it found it: the item paths, their metadata (nil for an item
    /// gone or not addressable) and which paths are in a locked keyring. Kept as is: only a
    /// read of the listing (``secrets(of:listedIn:)``) needs it by address, and a plain `list` should not pay for that.
    struct ListedPaths: Sendable {
        let paths: [String]
        let infos: [ItemInfo?]
        let locked: Set<String>

        /// The first item of each address (as a lookup reads it).
        func byAddress() -> [SecretAddress: String] {
            var first: [SecretAddress: String] = [:]
            for (path, info) in zip(paths, infos) {
                // An item gone, or another tool's with a name no key may have, has no address.
                guard let info, let service = try? ServiceName(info.service), let key = try? KeychainKey(info.key)
                else { continue }
                let address = SecretAddress(service: service, key: key)
                if first[address] == nil { first[address] = path }
            }
            return first
        }
    }

    /// The secrets of `addresses`, in order (nil: no such item), each item searched for.
    public func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        try secrets(of: addresses, listed: nil)
    }

    /// The secrets of `addresses`, in order (nil: no such item). When `listing` (this store's)
    /// named them all, the listed items are read without searching again; an item gone since
    /// then is looked for afresh.
    public func secrets(of addresses: [SecretAddress], listedIn listing: ItemListing) throws(KeychainError)
        -> [Data?]
    {
        try secrets(of: addresses, listed: listing.found as? ListedPaths)
    }

    private func secrets(of addresses: [SecretAddress], listed listing: ListedPaths?) throws(KeychainError)
        -> [Data?]
    {
        guard !addresses.isEmpty else { return [] }
        return try connection.withClient("read the secrets", seconds: timeout, preparingSession: true) { client in
            var found: [SecretAddress: Data] = [:]
            var missing = addresses
            if let listing, case let listed = listing.byAddress(), addresses.allSatisfy({ listed[$0] != nil }) {
                let paths = addresses.map { listed[$0]! }
                let secrets = try readSecrets(of: Array(Set(paths)), locked: listing.locked.intersection(paths), client)
                for (address, path) in zip(addresses, paths) { found[address] = secrets[path] }
                missing = addresses.filter { found[$0] == nil }
            }
            if !missing.isEmpty {
                let paths = try searchFirstPaths(of: missing, client)
                let secrets = try readSecrets(of: paths.unlocked, locked: paths.locked, client)
                for (address, path) in paths.byAddress { found[address] = secrets[path] }
            }
            return addresses.map { found[$0] }
        }
    }

    /// The first item of each address among `addresses` (a search per service and every found
    /// item's attributes), and which of those paths are in a locked keyring.
    private func searchFirstPaths(of addresses: [SecretAddress], _ client: SecretServiceClient)
        throws -> (byAddress: [SecretAddress: String], unlocked: [String], locked: Set<String>)
    {
        var candidates: [String] = []
        var locked: Set<String> = []
        for service in Set(addresses.map(\.service)).sorted() {
            let found = try client.searchPaths([("service", service.rawValue)])
            candidates += found.unlocked + found.locked
            locked.formUnion(found.locked)
        }
        let wanted = Set(addresses)
        let found = ListedPaths(paths: candidates, infos: try client.infos(candidates, keysOnly: true), locked: locked)
        let paths = found.byAddress().filter { wanted.contains($0.key) }
        let needed = Set(paths.values)
        return (paths, needed.subtracting(locked).sorted(), needed.intersection(locked))
    }

    /// The secrets of the items at `paths` and `locked` (unlocked first, which may prompt): in
    /// this store's session, or through libsecret for a service without one. An item gone
    /// meanwhile is left out.
    private func readSecrets(of paths: [String], locked: Set<String>, _ client: SecretServiceClient) throws
        -> [String: Data]
    {
        let readable =
            paths.filter { !locked.contains($0) } + (try client.unlockAll(locked.sorted(), what: "some items are"))
        if let secrets = try client.inSession({ try getSecrets(readable, in: $0, client) }) { return secrets }
        var secrets: [String: Data] = [:]
        for path in readable { secrets[path] = try client.readSecret(at: path) }
        return secrets
    }

    /// The secrets of the items at `paths` (an item gone or locked meanwhile is left out), in
    /// `Service.GetSecrets` calls of ``secretsPerCall`` items.
    private func getSecrets(_ paths: [String], in session: SecretSession, _ client: SecretServiceClient) throws
        -> [String: Data]
    {
        var secrets: [String: Data] = [:]
        for start in stride(from: 0, to: paths.count, by: Self.secretsPerCall) {
            let chunk = paths[start..<min(start + Self.secretsPerCall, paths.count)]
            // org.freedesktop.Secret.Service.GetSecrets(ao items, o session) -> (a{o(oayays)} secrets)
            let call = try client.bus.send(
                SecretServiceConnection.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                "GetSecrets", [.array(element: "o", chunk.map { .objectPath($0) }), .objectPath(session.path)])
            session.deriveKey()
            let answer = try client.bus.answer(call)
            // A provider that will not send so many secrets in one reply (keychain-cli serve, past
            // 64 MiB) answers Failed, and kwalletd5 answers InvalidArgs ("Can't find item at path")
            // for the whole call when one item was deleted since the search: then each item is
            // read alone, and one that is gone is skipped.
            if case .error(let name, _) = answer,
                ["org.freedesktop.DBus.Error.Failed", "org.freedesktop.DBus.Error.InvalidArgs"].contains(name)
            {
                for path in chunk {
                    if let secret = try client.secret(at: path, in: session) { secrets[path] = secret }
                }
                continue
            }
            let values = try SecretServiceConnection.values(of: answer, on: client.bus)
            guard values.count == 1, case .dictionary(_, _, let entries) = values[0] else {
                throw KeychainError.backendFailure(detail: "the Secret Service answered GetSecrets without secrets")
            }
            for entry in entries {
                guard case .objectPath(let path) = entry.key else { continue }
                secrets[path] = try SecretServiceConnection.confirmingEmpty(
                    session.open(entry.value), at: path, on: client.bus)
            }
        }
        return secrets
    }
}
