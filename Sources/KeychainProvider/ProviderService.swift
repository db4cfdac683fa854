internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

// The Service interface (/org/freedesktop/secrets) and the Session interface, and the routing of
// every call to its handler.
extension SecretServiceProvider {
    /// The reply to `call` (a tuple), or the D-Bus error to answer it with.
    func handle(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        try requireWorkingLog()
        switch (call.interface, call.method) {
        case ("org.freedesktop.DBus.Properties", _): return try handlePropertiesCall(call)
        case (ProviderInterface.service, "OpenSession"): return try openSession(call)
        case (ProviderInterface.service, "SearchItems"):
            var unlocked: [String] = []
            var locked: [String] = []
            let attributes = attributesArgument(call, 0)
            for collection in collections {
                let found = collection.index.search(attributes).map { collection.path(of: $0.number) }
                if collection.locked { locked += found } else { unlocked += found }
            }
            return Variant.tuple([Variant.objectPaths(unlocked), Variant.objectPaths(locked)])
        case (ProviderInterface.service, "GetSecrets"): return try getSecrets(call)
        case (ProviderInterface.service, "Unlock"): return setLocked(false, call)
        case (ProviderInterface.service, "Lock"): return setLocked(true, call)
        case (ProviderInterface.service, "ReadAlias"):
            return Variant.tuple([Variant.objectPath(aliased(call.string(0))?.path ?? "/")])
        case (ProviderInterface.service, "SetAlias"):
            let (alias, target) = (call.string(0), call.string(1))
            guard let collection = aliased(alias), self.collection(at: target) === collection else {
                throw .notSupported(
                    "this provider's aliases are fixed: default and login name the login collection, "
                        + "session the session collection")
            }
            return Variant.tuple([])
        case (ProviderInterface.service, "CreateCollection"):
            // The login collection holds every item of the backend: a client asking for a
            // collection gets it (or the session collection, for that alias).
            let collection = call.string(1) == "session" ? sessionItems : login
            return Variant.tuple([Variant.objectPath(collection.path), Variant.objectPath("/")])
        case (ProviderInterface.objectManager, "GetManagedObjects"): return try managedObjects()
        case (ProviderInterface.session, "Close"):
            _ = try session(call.path, for: call)
            closeSession(call.path)
            return Variant.tuple([])
        case (ProviderInterface.collection, _): return try handleCollectionCall(call)
        case (ProviderInterface.item, _): return try handleItemCall(call)
        default:
            throw .notSupported("\(call.interface).\(call.method) is not supported")
        }
    }

    /// The collection an alias names: `default` and `login` the login collection, `session` the
    /// session collection.
    func aliased(_ alias: String) -> ServedCollection? {
        switch alias {
        case "default", "login": login
        case "session": sessionItems
        default: nil
        }
    }

    /// The collection at `path`, its own or an alias's.
    func collection(at path: String) -> ServedCollection? {
        if path.hasPrefix(ServedCollection.aliasPrefix) {
            return aliased(String(path.dropFirst(ServedCollection.aliasPrefix.count)))
        }
        return collections.first { $0.path == path }
    }

    /// The item at `path` (under its collection's path or an alias's) and its collection.
    func item(at path: String) -> (ServedCollection, ServedItem)? {
        guard let slash = path.lastIndex(of: "/"), let collection = collection(at: String(path[..<slash])),
            let number = Int(path[path.index(after: slash)...]), let item = collection.index.items[number]
        else { return nil }
        return (collection, item)
    }

    private func openSession(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        let input = call.argument(1).unboxed
        let path = "\(ProviderInterface.sessionPrefix)\(lastSession + 1)"
        let algorithm = call.string(0)
        guard
            let (session, output) = try ProviderSession.open(
                algorithm: algorithm, input: input, path: path, owner: call.sender)
        else {
            throw .notSupported(
                "the algorithm '\(algorithm)' is not supported: use plain or \(SecretSession.algorithm)")
        }
        lastSession += 1
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

    private func getSecrets(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        let session = try session(call.string(1), for: call)
        // Each item once (a dictionary holds each path once), those of a locked collection left
        // out as gnome-keyring leaves them out; each collection's store read once.
        let paths = pathsArgument(call, 0)
        var seen: Set<String> = []
        var entries: [OwnedVariant] = []
        for collection in collections where !collection.locked {
            let items = paths.compactMap { path in
                item(at: path).flatMap { $0.0 === collection ? $0.1 : nil }
            }.filter { seen.insert(collection.path(of: $0.number)).inserted }
            // Every item asked for is logged, those refused too, before any is read.
            let allowed = try items.map { (item) throws(ProviderError) in try record(.read, item.address, by: call) }
            if allowed.contains(false) { throw denial(call) }
            let secrets = try backend { () throws(KeychainError) in
                try collection.store.secrets(of: items.map(\.address))
            }
            for (item, secret) in zip(items, secrets) {
                guard let secret else { continue }
                secretObserver?(secret)
                let encoded = try session.encode(secret, contentType: item.details.contentType)
                entries.append(Variant.entry(Variant.objectPath(collection.path(of: item.number)), encoded))
            }
        }
        let reply = Variant.tuple([Variant.array(of: keychain_cli_type_secret_entry(), entries)])
        // A reply over the bus's limits would make the bus drop serve's connection.
        guard Variant.fitsInMessage(reply) else {
            throw .failed("the secrets asked for are more than one D-Bus message can carry: ask for fewer at a time")
        }
        return reply
    }

    /// Unlocks or locks the collections of the objects named (a collection, an alias or an
    /// item); the reply names exactly the objects asked for that exist, as go-keyring expects.
    private func setLocked(_ lock: Bool, _ call: ProviderCall) -> OwnedVariant {
        var known: [String] = []
        for path in pathsArgument(call, 0) {
            guard let collection = collection(at: path) ?? item(at: path)?.0 else { continue }
            known.append(path)
            if collection.locked != lock {
                collection.locked = lock
                propertiesChanged(ProviderInterface.collection, ["Locked"], at: collection.path)
            }
        }
        // No prompt: the session bus is the boundary, as for an unlocked gnome-keyring.
        return Variant.tuple([Variant.objectPaths(known), Variant.objectPath("/")])
    }

    func attributesArgument(_ call: ProviderCall, _ index: Int) -> [String: String] {
        Variant.strings(call.argument(index))
    }

    func pathsArgument(_ call: ProviderCall, _ index: Int) -> [String] { Variant.texts(call.argument(index)) }
}
