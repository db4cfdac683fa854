internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore

// The item queries of a SecretServiceConnection, on the session bus without libsecret's service
// proxy (search, item properties, deletion), and the decoding of their replies.
extension SecretServiceConnection {
    /// The object paths of the items whose attributes include `pairs` (all items when `pairs`
    /// is empty, which libsecret's search refuses).
    func searchPaths(
        _ operation: BoundedOperation, _ bus: OpaquePointer, _ pairs: KeyValuePairs<String, String>
    ) throws -> (unlocked: [String], locked: [String]) {
        let found = try endSearch(try beginSearch(operation, bus, pairs))
        guard pairs.isEmpty, found.unlocked.isEmpty, found.locked.isEmpty else { return found }
        // KeePassXC matches no item for an empty search, where gnome-keyring matches every one.
        return try collectionsItems(operation, bus)
    }

    /// The items whose attributes include `pairs`, with all their attributes, as libsecret's search
    /// with SECRET_SEARCH_ALL | SECRET_SEARCH_UNLOCK finds them, but on this bus: a search, an
    /// unlock of the locked ones (libsecret's, which may prompt, within the deadline), and their
    /// `Attributes` in pipelined calls. Unlocked items come first; an item still locked is kept
    /// (reading its secret says so); an item deleted meanwhile is left out. `schema`: a schema
    /// name the items must carry as `xdg:schema`, as libsecret adds it for a schema it matches.
    func findItems(
        _ pairs: [String: String], schema: String? = nil, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> [(attributes: [String: String], path: String)] {
        var pairs = pairs
        if let schema { pairs["xdg:schema"] = schema }
        let found = try endSearch(try beginSearch(operation, bus, pairs.sorted { $0.key < $1.key }))
        let unlocked = try unlock(found.locked, operation)
        let paths = found.unlocked + unlocked + found.locked.filter { !unlocked.contains($0) }
        let attributes = try itemProperty("Attributes", of: paths, operation, bus) { Self.dictionary($0) }
        return zip(attributes, paths).compactMap { attributes, path in attributes.map { ($0, path) } }
    }

    /// A search started by ``beginSearch(_:_:_:)``.
    struct PendingSearch {
        fileprivate let calls: GDBusCalls
        fileprivate let pairs: [(String, String)]
        fileprivate let call: BoundedOperation.PendingCall
    }

    /// Sends the search for `pairs` (see ``searchPaths(_:_:_:)``) without waiting for
    /// its answer, which ``endSearch(_:)`` returns.
    func beginSearch(
        _ operation: BoundedOperation, _ bus: OpaquePointer, _ pairs: some Sequence<(key: String, value: String)>
    ) throws -> PendingSearch {
        let calls = GDBusCalls(operation, bus)
        let pairs = pairs.map { ($0.key, $0.value) }
        return PendingSearch(calls: calls, pairs: pairs, call: try Self.sendSearch(pairs, on: calls))
    }

    /// The answer to a search ``beginSearch(_:_:_:)`` sent (``searchResult(_:_:on:)``).
    func endSearch(_ search: PendingSearch) throws -> (unlocked: [String], locked: [String]) {
        try Self.searchResult(search.call, search.pairs, on: search.calls)
    }

    /// The metadata of the items at `paths`, in order (nil for an item that is gone, or that
    /// cannot be addressed as service and key), as ``itemProperties(_:of:_:_:decode:)`` reads
    /// them: the attributes, label, creation and modification times, or the attributes alone for
    /// `keysOnly`.
    ///
    /// Not GetAll: gnome-keyring answers each property it reads for a client by looking the item
    /// up among all it holds, and GetAll reads six (Locked and Type too): the four Gets
    /// are the faster for a large keyring (measured; bench/RESULTS.md has list --json's times).
    func infos(_ operation: BoundedOperation, _ bus: OpaquePointer, _ paths: [String], keysOnly: Bool) throws
        -> [ItemInfo?]
    {
        let names = keysOnly ? ["Attributes"] : ["Attributes", "Label", "Created", "Modified"]
        return try itemProperties(names, of: paths, operation, bus) { values in
            let attributes = Self.dictionary(values[0])
            guard let service = attributes["service"], let key = attributes["username"] else { return nil }
            guard !keysOnly else {
                return ItemInfo(service: service, key: key, label: nil, application: attributes["application"])
            }
            let label = values[1].isOfType(keychain_cli_type_string()) ? values[1].string : nil
            return ItemInfo(
                service: service, key: key, label: label, application: attributes["application"],
                created: Self.date(variant: values[2]), modified: Self.date(variant: values[3]))
        }
    }

    /// The item property `name` of each item at `paths`, in order, decoded by `decode` from the
    /// property's value; nil for an item that is gone. Asked in pipelined Properties.Get calls.
    func itemProperty<T>(
        _ name: String, of paths: [String], _ operation: BoundedOperation, _ bus: OpaquePointer,
        decode: (OwnedVariant) -> T?
    ) throws -> [T?] {
        try itemProperties([name], of: paths, operation, bus) { decode($0[0]) }
    }

    /// The item properties `names` of each item at `paths`, in order, decoded together by `decode`
    /// from their values (in the order of `names`); nil for an item that is gone. A property the
    /// service does not have is given to `decode` as an empty tuple, a type no property has (as
    /// GetAll would leave it out). From one GetManagedObjects call for many items where the
    /// provider answers it, else in pipelined Properties.Get calls, an item's one after the other.
    func itemProperties<T>(
        _ names: [String], of paths: [String], _ operation: BoundedOperation, _ bus: OpaquePointer,
        decode: ([OwnedVariant]) -> T?
    ) throws -> [T?] {
        if paths.count >= Self.managedObjectsThreshold, let managed = try managedItemProperties(operation, bus) {
            return paths.map { path in
                guard let properties = managed[path] else { return nil }
                return decode(names.map { properties.lookup($0) ?? .emptyTuple() })
            }
        }
        let values = try operation.callEach(
            paths.count * names.count,
            start: { index, cancellable, callback, data in
                g_dbus_connection_call(
                    bus, Self.busName, paths[index / names.count], "org.freedesktop.DBus.Properties", "Get",
                    g_variant_new_tuple(
                        [
                            g_variant_new_string("org.freedesktop.Secret.Item"),
                            g_variant_new_string(names[index % names.count]),
                        ], 2),
                    nil, G_DBUS_CALL_FLAGS_NONE, -1, cancellable, callback, data)
            },
            finish: { _, result, error in
                finishItemCall(bus, result, error).map(propertyValue) ?? absentProperty(error)
            })
        return paths.indices.map { item in
            let properties = values[item * names.count..<(item + 1) * names.count].compactMap { $0 }
            return properties.count == names.count ? decode(properties) : nil
        }
    }

    /// An empty tuple, clearing `error`, when it says the property asked for does not exist
    /// (`UnknownProperty`; GDBus answers `InvalidArgs` "No such property"); else nil.
    private func absentProperty(_ error: GErrorSlot) -> OwnedVariant? {
        guard let failure = error.pointee else { return nil }
        switch remoteErrorName(failure) {
        case "org.freedesktop.DBus.Error.UnknownProperty", "org.freedesktop.DBus.Error.InvalidArgs":
            _ = takeError(error)
            return .emptyTuple()
        default: return nil
        }
    }

    /// The pairs of an `a{ss}` GVariant; none for a value of another type.
    static func dictionary(_ table: OwnedVariant) -> [String: String] {
        var result: [String: String] = [:]
        guard table.isOfType(keychain_cli_type_string_map()) else { return result }
        for entry in table.children { result[entry.child(0).string] = entry.child(1).string }
        return result
    }

    static func date(_ secondsSince1970: UInt64) -> Date? {
        secondsSince1970 == 0 ? nil : Date(timeIntervalSince1970: Double(secondsSince1970))
    }

    /// The time in an item's `Created` or `Modified` value (`t`, seconds since 1970); nil for 0 or
    /// a value of another type.
    static func date(variant value: OwnedVariant) -> Date? {
        value.isOfType(keychain_cli_type_uint64()) ? date(value.uint64) : nil
    }

    /// Deletes the (unlocked) items at `paths` with pipelined Item.Delete calls; how many were
    /// still there.
    func deleteItems(at paths: [String], _ operation: BoundedOperation, _ bus: OpaquePointer) throws -> Int {
        // org.freedesktop.Secret.Item.Delete() -> (o prompt); "/" means no prompt is needed.
        let prompts = try operation.callEach(
            paths.count,
            start: { index, cancellable, callback, data in
                g_dbus_connection_call(
                    bus, Self.busName, paths[index], "org.freedesktop.Secret.Item", "Delete", nil,
                    keychain_cli_type_object_path_reply(), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, callback, data)
            },
            finish: { _, result, error in
                finishItemCall(bus, result, error).map { $0.child(0).string }
            })
        try performPrompts(prompts.compactMap { $0 }.filter { $0 != "/" }, operation)
        return prompts.count { $0 != nil }
    }

    /// Performs, one after another, the prompts a provider answered deletions with: KeePassXC
    /// answers every Item.Delete with one, which completes at once unless its user is asked to
    /// confirm (then this waits for the answer, within the deadline). A dismissed prompt is a
    /// refusal.
    private func performPrompts(_ prompts: [String], _ operation: BoundedOperation) throws {
        guard !prompts.isEmpty else { return }
        try connect(operation, openSession: false).use(as: SecretService.self) { service in
            for prompt in prompts {
                // secret_service_prompt_at_dbus_path / …_finish: nil, and no error, when dismissed.
                let result = try operation.call(
                    { secret_service_prompt_at_dbus_path(service, prompt, nil, $0, $1, $2) },
                    finish: { OwnedVariant(takingIfAny: secret_service_prompt_at_dbus_path_finish(service, $0, $1)) })
                guard result != nil else {
                    throw KeychainError.permissionDenied(
                        detail: "the deletion was declined at the Secret Service's prompt")
                }
            }
        }
    }
}
