import CLibSecret

// Every item's properties in one call, from a provider that offers D-Bus's standard
// ObjectManager on /org/freedesktop/secrets (keychain-cli serve does; gnome-keyring does not).
extension SecretServiceConnection {
    /// From how many items on one GetManagedObjects call (which carries every object the provider
    /// has) is asked before their Properties.Get calls.
    static let managedObjectsThreshold = 64

    /// The Item properties (`a{sv}`) of every item the provider has, by object path, from one
    /// GetManagedObjects call; nil when the provider does not answer it (gnome-keyring's
    /// UnknownMethod, or any other error but the deadline's): then the caller asks each item.
    /// The caller unrefs the values.
    func managedItemProperties(_ operation: BoundedOperation, _ bus: OpaquePointer) throws -> [String: OpaquePointer]? {
        let reply: OpaquePointer? = try operation.call(
            {
                g_dbus_connection_call(
                    bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.DBus.ObjectManager",
                    "GetManagedObjects", nil, keychain_cli_type_managed_objects_reply(), G_DBUS_CALL_FLAGS_NONE, -1,
                    $0, $1, $2)
            },
            finish: { result, error in
                let reply = g_dbus_connection_call_finish(bus, result, error)
                if let failure = error.pointee,
                    failure.pointee.domain != keychain_cli_io_error_quark()
                        || failure.pointee.code != Int32(G_IO_ERROR_CANCELLED.rawValue)
                {
                    g_clear_error(error)
                }
                return reply
            })
        guard let reply else { return nil }
        defer { g_variant_unref(reply) }
        let objects = g_variant_get_child_value(reply, 0)!
        defer { g_variant_unref(objects) }
        var items: [String: OpaquePointer] = [:]
        for index in 0..<g_variant_n_children(objects) {
            let object = g_variant_get_child_value(objects, index)!
            defer { g_variant_unref(object) }
            let interfaces = g_variant_get_child_value(object, 1)!
            defer { g_variant_unref(interfaces) }
            if let properties = g_variant_lookup_value(interfaces, "org.freedesktop.Secret.Item", nil) {
                items[variantString(object, child: 0)] = properties
            }
        }
        return items
    }
}
