import CLibSecret
import FoundationEssentials

// The Service interface (/org/freedesktop/secrets) and the Session interface, and the routing of
// every call to its handler.
extension SecretServiceProvider {
    /// The reply to `call` (a tuple), or the D-Bus error to answer it with.
    func handle(_ call: ProviderCall) throws(ProviderError) -> OpaquePointer {
        switch (call.interface, call.method) {
        case (ProviderInterface.service, "OpenSession"): return try openSession(call)
        case (ProviderInterface.service, "SearchItems"):
            let found = index.search(attributesArgument(call, 0)).map { ProviderIndex.path(of: $0.number) }
            return Variant.tuple([Variant.objectPaths(locked ? [] : found), Variant.objectPaths(locked ? found : [])])
        case (ProviderInterface.service, "GetSecrets"): return try getSecrets(call)
        case (ProviderInterface.service, "Unlock"): return setLocked(false, call)
        case (ProviderInterface.service, "Lock"): return setLocked(true, call)
        case (ProviderInterface.service, "ReadAlias"):
            let known = ["default", "login"].contains(call.string(0))
            return Variant.tuple([Variant.objectPath(known ? ProviderIndex.collectionPath : "/")])
        case (ProviderInterface.service, "SetAlias"):
            guard call.string(0) == "default", isCollection(call.string(1)) else {
                throw .notSupported("keychain-cli serve has one collection, login, whose alias is default")
            }
            return Variant.tuple([])
        case (ProviderInterface.service, "CreateCollection"):
            // One collection holds every item of the backend: a client asking for one gets it.
            return Variant.tuple([Variant.objectPath(ProviderIndex.collectionPath), Variant.objectPath("/")])
        case (ProviderInterface.objectManager, "GetManagedObjects"): return try managedObjects()
        case (ProviderInterface.session, "Close"):
            _ = try session(call.path, for: call)
            closeSession(call.path)
            return Variant.tuple([])
        case (ProviderInterface.collection, _), (ProviderInterface.item, _):
            return try handleItemCall(call)
        default:
            throw .notSupported("\(call.interface).\(call.method) is not supported")
        }
    }

    private func openSession(_ call: ProviderCall) throws(ProviderError) -> OpaquePointer {
        let boxed = call.argument(1)
        defer { g_variant_unref(boxed) }
        let input = g_variant_get_variant(boxed)!
        defer { g_variant_unref(input) }
        lastSession += 1
        let path = "\(ProviderInterface.sessionPrefix)\(lastSession)"
        let algorithm = call.string(0)
        guard
            let (session, output) = try ProviderSession.open(
                algorithm: algorithm, input: input, path: path, owner: call.sender)
        else {
            throw .notSupported(
                "the algorithm '\(algorithm)' is not supported: use plain or \(SecretSession.algorithm)")
        }
        do {
            try register(path, ProviderInterface.session)
        } catch {
            throw .failed(error.description)
        }
        sessions[path] = session
        objectsAdded([path], ProviderInterface.session)
        return Variant.tuple([Variant.boxed(output), Variant.objectPath(path)])
    }

    /// The session at `path`, if the caller opened it.
    func session(_ path: String, for call: ProviderCall) throws(ProviderError) -> ProviderSession {
        guard let session = sessions[path], session.owner == call.sender else {
            throw .noSession("no session \(path) of this client: open one with OpenSession")
        }
        return session
    }

    private func getSecrets(_ call: ProviderCall) throws(ProviderError) -> OpaquePointer {
        let session = try session(call.string(1), for: call)
        // Each item once (a dictionary holds each path once), locked ones left out as
        // gnome-keyring leaves them out.
        var seen: Set<Int> = []
        let items =
            locked
            ? [] : pathsArgument(call, 0).compactMap { index.item(at: $0) }.filter { seen.insert($0.number).inserted }
        let secrets: [Data?]
        do {
            secrets = try store.secrets(of: items.map(\.address))
        } catch {
            throw .failed(error.description)
        }
        // A reply past the bus's message size would make the bus drop serve's connection.
        guard secrets.reduce(0, { $0 + ($1?.count ?? 0) }) <= Self.largestReply else {
            throw .failed(
                "the secrets asked for are larger than \(Self.largestReply >> 20) MiB together: ask for fewer")
        }
        var entries: [OpaquePointer] = []
        for (item, secret) in zip(items, secrets) {
            guard let secret else { continue }
            let encoded = try session.encode(secret, contentType: item.details.contentType)
            entries.append(g_variant_new_dict_entry(Variant.objectPath(ProviderIndex.path(of: item.number)), encoded)!)
        }
        return Variant.tuple([Variant.array(of: keychain_cli_type_secret_entry(), entries)])
    }

    /// Unlocks or locks the collection for any of the objects named (the collection, its alias or
    /// an item); the reply names exactly the objects asked for that exist, as go-keyring expects.
    private func setLocked(_ lock: Bool, _ call: ProviderCall) -> OpaquePointer {
        let known = pathsArgument(call, 0).filter { isCollection($0) || index.item(at: $0) != nil }
        if !known.isEmpty && locked != lock {
            locked = lock
            propertiesChanged(
                ProviderInterface.collection, ["Locked"], at: [ProviderIndex.collectionPath, ProviderIndex.aliasPath])
        }
        // No prompt: the session bus is the boundary, as for an unlocked gnome-keyring.
        return Variant.tuple([Variant.objectPaths(known), Variant.objectPath("/")])
    }

    func isCollection(_ path: String) -> Bool {
        path == ProviderIndex.collectionPath || path == ProviderIndex.aliasPath
    }

    func attributesArgument(_ call: ProviderCall, _ index: Int) -> [String: String] {
        let value = call.argument(index)
        defer { g_variant_unref(value) }
        return Variant.strings(value)
    }

    func pathsArgument(_ call: ProviderCall, _ index: Int) -> [String] {
        let value = call.argument(index)
        defer { g_variant_unref(value) }
        return Variant.texts(value)
    }
}
