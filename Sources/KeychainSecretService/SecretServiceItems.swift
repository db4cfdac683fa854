import FoundationEssentials
import KeychainDBus
import KeychainStore

// The item queries of a SecretServiceClient, written once for the wire and GDBus: search (with
// the quirks of each provider), item properties in pipelined calls or one GetManagedObjects, and
// deletion; a provider's prompts and unlocking go through libsecret.
extension SecretServiceConnection {
    /// From how many items on one GetManagedObjects call (which carries every object the provider
    /// has) is asked before their Properties.Get calls.
    static let managedObjectsThreshold = 64
}

extension SecretServiceClient {
    /// The object paths of the items whose attributes include `pairs` (all items when `pairs`
    /// is empty, which libsecret's search refuses).
    func searchPaths(_ pairs: [(String, String)], openingSession: Bool = false) throws -> FoundItems {
        let found = try search(pairs, openingSession: openingSession)
        guard pairs.isEmpty, found.unlocked.isEmpty, found.locked.isEmpty else { return found }
        // KeePassXC matches no item for an empty search, where gnome-keyring matches every one.
        return try collectionsItems()
    }

    /// ``searchPaths(_:)``, except that finding nothing in a locked default collection that
    /// shows no item is an error: KeePassXC hides a locked database's items, so such a search
    /// proves nothing (gnome-keyring shows a locked collection's items).
    func searchVisiblePaths(_ pairs: [(String, String)], openingSession: Bool = false) throws -> FoundItems {
        let found = try searchPaths(pairs, openingSession: openingSession)
        if found.unlocked.isEmpty && found.locked.isEmpty, try SecretServiceConnection.hidesItemsWhileLocked(on: bus) {
            throw KeychainError.locked(detail: "the default keyring is locked and hides its items until it is unlocked")
        }
        return found
    }

    /// The items of every collection, as the Service's `Collections` and each collection's
    /// `Items` and `Locked` properties give them: those of unlocked collections, then of locked.
    func collectionsItems() throws -> FoundItems {
        var found: FoundItems = ([], [])
        for collection in try property("/org/freedesktop/secrets", "Service", "Collections")?.strings ?? [] {
            let items = try property(collection, "Collection", "Items")?.strings ?? []
            if try property(collection, "Collection", "Locked") == .boolean(true) {
                found.locked += items
            } else {
                found.unlocked += items
            }
        }
        return found
    }

    /// The items whose attributes include `pairs`, with all their attributes, as libsecret's search
    /// with SECRET_SEARCH_ALL | SECRET_SEARCH_UNLOCK finds them: a search, an unlock of the locked
    /// ones (libsecret's, which may prompt, within the limit), and their `Attributes` in
    /// pipelined calls. Unlocked items come first; an item still locked is kept (reading its
    /// secret says so); an item deleted meanwhile is left out. `schema`: a schema name the items
    /// must carry as `xdg:schema`, as libsecret adds it for a schema it matches.
    func findItems(_ pairs: [String: String], schema: String? = nil) throws
        -> [(attributes: [String: String], path: String)]
    {
        var pairs = pairs
        if let schema { pairs["xdg:schema"] = schema }
        let found = try search(pairs.sorted { $0.key < $1.key }, openingSession: false)
        let unlocked = try unlock(found.locked)
        let paths = found.unlocked + unlocked + found.locked.filter { !unlocked.contains($0) }
        let attributes = try itemProperties(["Attributes"], of: paths).map { $0?[0]?.stringMap }
        return zip(attributes, paths).compactMap { attributes, path in attributes.map { ($0, path) } }
    }

    /// The paths of `paths` the service unlocked (which may prompt, within the limit): fewer
    /// when there is no prompter or the prompt was dismissed.
    func unlock(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else { return [] }
        return try withOperation { try connection.unlock(paths, $0) }
    }

    /// ``unlock(_:)`` of every one of `paths`, or `.locked` when one stays locked (a prompt
    /// dismissed, a wrong password): `what` says what was in the locked keyring.
    func unlockAll(_ paths: [String], what: String) throws -> [String] {
        let unlocked = try unlock(paths)
        guard unlocked.count == paths.count else {
            throw KeychainError.locked(detail: "\(what) in a locked keyring that could not be unlocked")
        }
        return unlocked
    }

    /// The metadata of the items at `paths`, in order (nil for an item that is gone, or that
    /// cannot be addressed as service and key): the attributes, label, creation and modification
    /// times, or the attributes alone for `keysOnly`.
    ///
    /// Not GetAll: gnome-keyring answers each property it reads for a client by looking the item
    /// up among all it holds, and GetAll reads six (Locked and Type too): the four Gets
    /// are the faster for a large keyring (measured; bench/RESULTS.md has list --json's times).
    func infos(_ paths: [String], keysOnly: Bool) throws -> [ItemInfo?] {
        let names = keysOnly ? ["Attributes"] : ["Attributes", "Label", "Created", "Modified"]
        return try itemProperties(names, of: paths).map { values in
            guard let values, let attributes = values[0]?.stringMap, let service = attributes["service"],
                let key = attributes["username"]
            else { return nil }
            guard !keysOnly else {
                return ItemInfo(service: service, key: key, label: nil, application: attributes["application"])
            }
            var label: String?
            if case .string(let text) = values[1] { label = text }
            return ItemInfo(
                service: service, key: key, label: label, application: attributes["application"],
                created: Self.date(values[2]), modified: Self.date(values[3]))
        }
    }

    /// The time in an item's `Created` or `Modified` value (`t`, seconds since 1970); nil for 0,
    /// none or a value of another type.
    static func date(_ value: BusValue?) -> Date? {
        guard case .uint64(let seconds) = value, seconds != 0 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// The Item properties `names` of each item at `paths`, in order: nil for an item that is
    /// gone, and in an item's values nil for a property the service does not have. From one
    /// GetManagedObjects call for many items where the provider answers it, else in pipelined
    /// Properties.Get calls, an item's one after the other.
    func itemProperties(_ names: [String], of paths: [String]) throws -> [[BusValue?]?] {
        if paths.count >= SecretServiceConnection.managedObjectsThreshold, let managed = try managedItemProperties() {
            return paths.map { path in managed[path].map { properties in names.map { properties[$0] } } }
        }
        let answers = try pipelined(paths.count * names.count) { index in
            // org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value)
            try bus.send(
                SecretServiceConnection.busName, paths[index / names.count], "org.freedesktop.DBus.Properties", "Get",
                [.string("org.freedesktop.Secret.Item"), .string(names[index % names.count])])
        }
        return try paths.indices.map { item in
            var values: [BusValue?] = []
            for answer in answers[item * names.count..<(item + 1) * names.count] {
                switch answer {
                case .error(let name, _) where vanishedObjectErrors.contains(name): return nil
                // UnknownProperty; GDBus's own objects answer InvalidArgs "No such property".
                case .error("org.freedesktop.DBus.Error.UnknownProperty", _),
                    .error("org.freedesktop.DBus.Error.InvalidArgs", _):
                    values.append(nil)
                default:
                    let value = try SecretServiceConnection.values(of: answer, on: bus)
                    guard value.count == 1, case .variant(let inner) = value[0] else {
                        throw KeychainError.backendFailure(
                            detail: "the Secret Service answered Properties.Get with "
                                + (value.isEmpty ? "nothing" : value.map(\.signature).joined()))
                    }
                    values.append(inner)
                }
            }
            return values
        }
    }

    /// The Item properties of every item the provider has, by object path, from one
    /// GetManagedObjects call (D-Bus's standard ObjectManager on /org/freedesktop/secrets:
    /// keychain-cli serve offers it, gnome-keyring does not); nil when the provider does not
    /// answer it (any error the service sent): then the caller asks each item.
    func managedItemProperties() throws -> [String: [String: BusValue]]? {
        // org.freedesktop.DBus.ObjectManager.GetManagedObjects() -> (a{oa{sa{sv}}} objects)
        let answer = try bus.answer(
            bus.send(
                SecretServiceConnection.busName, "/org/freedesktop/secrets", "org.freedesktop.DBus.ObjectManager",
                "GetManagedObjects", []))
        guard case .values(let values) = answer, values.count == 1, case .dictionary(_, _, let objects) = values[0]
        else { return nil }
        var items: [String: [String: BusValue]] = [:]
        for object in objects {
            guard case .objectPath(let path) = object.key, case .dictionary(_, _, let interfaces) = object.value,
                let item = interfaces.first(where: { $0.key == .string("org.freedesktop.Secret.Item") }),
                case .dictionary(_, _, let properties) = item.value
            else { continue }
            var named: [String: BusValue] = [:]
            for property in properties {
                if case .string(let name) = property.key, case .variant(let value) = property.value {
                    named[name] = value
                }
            }
            items[path] = named
        }
        return items
    }

    /// Deletes the (unlocked) items at `paths` with pipelined Item.Delete calls; how many were
    /// still there. The prompts a provider answers with are then performed one after another
    /// (KeePassXC answers every Item.Delete with one, which completes at once unless its user is
    /// asked to confirm: then this waits for the answer, within the limit); a dismissed prompt
    /// is a refusal.
    func deleteItems(at paths: [String]) throws -> Int {
        // org.freedesktop.Secret.Item.Delete() -> (o prompt); "/" means no prompt is needed.
        let answers = try pipelined(paths.count) { index in
            try bus.send(SecretServiceConnection.busName, paths[index], "org.freedesktop.Secret.Item", "Delete", [])
        }
        var deleted = 0
        var prompts: [String] = []
        var prompted: [String] = []
        for (path, answer) in zip(paths, answers) {
            if case .error(let name, _) = answer, vanishedObjectErrors.contains(name) { continue }
            let values = try SecretServiceConnection.values(of: answer, on: bus)
            guard values.count == 1, case .objectPath(let prompt) = values[0] else {
                throw KeychainError.backendFailure(detail: "the Secret Service answered Delete without a prompt path")
            }
            deleted += 1
            if prompt != "/" { (prompts, prompted) = (prompts + [prompt], prompted + [path]) }
        }
        guard !prompts.isEmpty else { return deleted }
        try withOperation { try connection.performPrompts(prompts, $0) }
        // A prompt its user declined completes as "dismissed", which libsecret's answer does not
        // always tell (KeePassXC's "Delete entry?" answered No): an item still there was not
        // deleted.
        if try itemProperties(["Label"], of: prompted).contains(where: { $0 != nil }) {
            throw KeychainError.permissionDenied(detail: "the deletion was declined at the Secret Service's prompt")
        }
        return deleted
    }

    /// Calls in flight at once in ``pipelined(_:_:)``, well under the session bus's limit on
    /// pending replies per connection.
    static let window = 128

    /// The answers to `count` calls `send` makes, in order, sent ``window`` at a time: the
    /// service answers a window in one round trip and its own time per call.
    func pipelined(_ count: Int, _ send: (Int) throws -> ServiceBus.Call) throws -> [BusAnswer] {
        var answers: [BusAnswer] = []
        answers.reserveCapacity(count)
        for first in stride(from: 0, to: count, by: Self.window) {
            let calls = try (first..<min(count, first + Self.window)).map(send)
            for call in calls { answers.append(try bus.answer(call)) }
        }
        return answers
    }

    /// The property `name` of the Secret Service interface `interface` (Service, Collection) of
    /// the object at `path`, unboxed; nil for a value that is not one.
    private func property(_ path: String, _ interface: String, _ name: String) throws -> BusValue? {
        // org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value)
        let answer = try bus.answer(
            bus.send(
                SecretServiceConnection.busName, path, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.freedesktop.Secret.\(interface)"), .string(name)]))
        let values = try SecretServiceConnection.values(of: answer, on: bus)
        guard values.count == 1, case .variant(let value) = values[0] else { return nil }
        return value
    }
}
