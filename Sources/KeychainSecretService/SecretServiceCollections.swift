internal import CLibSecret
import KeychainDBus
import KeychainStore

// Every item at once: every item's properties in one call, from a provider that offers D-Bus's
// standard ObjectManager on /org/freedesktop/secrets (keychain-cli serve does; gnome-keyring does
// not), and every collection's items, from a provider whose search cannot list them all.
extension SecretServiceConnection {
    /// The items of every collection, as the Service's `Collections` and each collection's
    /// `Items` and `Locked` properties give them: those of unlocked collections, then of locked.
    func collectionsItems(_ operation: BoundedOperation, _ bus: OpaquePointer) throws
        -> (unlocked: [String], locked: [String])
    {
        var found: (unlocked: [String], locked: [String]) = ([], [])
        let collections = try property("/org/freedesktop/secrets", "Service", "Collections", operation, bus)
        for collection in Self.paths(collections) {
            let items = Self.paths(try property(collection, "Collection", "Items", operation, bus))
            if Self.isTrue(try property(collection, "Collection", "Locked", operation, bus)) {
                found.locked += items
            } else {
                found.unlocked += items
            }
        }
        return found
    }

    /// ``searchPaths(_:_:_:)``, except that finding nothing in a locked default collection that
    /// shows no item is an error: KeePassXC hides a locked database's items, so such a search
    /// proves nothing (gnome-keyring shows a locked collection's items).
    func searchVisiblePaths(
        _ operation: BoundedOperation, _ bus: OpaquePointer, _ pairs: KeyValuePairs<String, String>
    ) throws -> (unlocked: [String], locked: [String]) {
        let found = try searchPaths(operation, bus, pairs)
        if found.unlocked.isEmpty && found.locked.isEmpty,
            try Self.hidesItemsWhileLocked(on: GDBusCalls(operation, bus))
        {
            throw KeychainError.locked(detail: "the default keyring is locked and hides its items until it is unlocked")
        }
        return found
    }

    /// The property `name` of the Secret Service interface `interface` (Service, Collection)
    /// of the object at `path`, unboxed.
    private func property(
        _ path: String, _ interface: String, _ name: String, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> OwnedVariant {
        let reply = try operation.callMethod(
            bus, Self.busName, path, "org.freedesktop.DBus.Properties", "Get",
            .tuple([g_variant_new_string("org.freedesktop.Secret.\(interface)"), g_variant_new_string(name)]))
        return propertyValue(reply)
    }

    /// The object paths of an `ao` (none for another type).
    private static func paths(_ value: OwnedVariant) -> [String] {
        guard value.isOfType(keychain_cli_type_object_paths()) else { return [] }
        return value.children.map(\.string)
    }

    /// Whether a value is the boolean true.
    private static func isTrue(_ value: OwnedVariant) -> Bool {
        value.isOfType(keychain_cli_type_boolean()) && value.boolean
    }

    /// From how many items on one GetManagedObjects call (which carries every object the provider
    /// has) is asked before their Properties.Get calls.
    static let managedObjectsThreshold = 64

    /// The Item properties (`a{sv}`) of every item the provider has, by object path, from one
    /// GetManagedObjects call; nil when the provider does not answer it (gnome-keyring's
    /// UnknownMethod, or any other error but the deadline's): then the caller asks each item.
    func managedItemProperties(_ operation: BoundedOperation, _ bus: OpaquePointer) throws -> [String: OwnedVariant]? {
        let reply = try operation.call(
            {
                g_dbus_connection_call(
                    bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.DBus.ObjectManager",
                    "GetManagedObjects", nil, keychain_cli_type_managed_objects_reply(), G_DBUS_CALL_FLAGS_NONE, -1,
                    $0, $1, $2)
            },
            finish: { result, error in
                let reply = OwnedVariant(takingIfAny: g_dbus_connection_call_finish(bus, result, error))
                if let failure = error.pointee, !GLibError(failure).isIOError(G_IO_ERROR_CANCELLED) {
                    _ = takeError(error)
                }
                return reply
            })
        guard let reply else { return nil }
        var items: [String: OwnedVariant] = [:]
        for object in reply.child(0).children {
            if let properties = object.child(1).lookup("org.freedesktop.Secret.Item") {
                items[object.child(0).string] = properties
            }
        }
        return items
    }
}
