import CLibSecret

// D-Bus's standard ObjectManager on /org/freedesktop/secrets: every object under it (the
// collection, its alias, the items, the sessions) with its properties in one reply, and
// InterfacesAdded/InterfacesRemoved as objects come and go. keychain-cli's own Secret Service
// backend lists a large collection with it: one call where other providers take four
// Properties.Get calls per item.
extension SecretServiceProvider {
    /// The properties each interface has, in the order of the introspection data.
    static func propertyNames(_ interface: String) -> [String] {
        switch interface {
        case ProviderInterface.collection: ["Items", "Label", "Locked", "Created", "Modified"]
        case ProviderInterface.item: ["Locked", "Attributes", "Label", "Type", "Created", "Modified"]
        default: []
        }
    }

    /// The reply to GetManagedObjects, `(a{oa{sa{sv}}})`, unless it would be larger than a bus
    /// takes (then the client asks each object, as it does of other providers).
    func managedObjects() throws(ProviderError) -> OpaquePointer {
        var objects = [ProviderIndex.collectionPath, ProviderIndex.aliasPath].map {
            managedObject($0, ProviderInterface.collection)
        }
        objects += index.items.keys.sorted().map { managedObject(ProviderIndex.path(of: $0), ProviderInterface.item) }
        objects += sessions.keys.sorted().map { managedObject($0, ProviderInterface.session) }
        let reply = Variant.tuple([Variant.array(of: keychain_cli_type_managed_object(), objects)])
        guard g_variant_get_size(reply) <= Self.largestReply else {
            g_variant_unref(g_variant_ref_sink(reply))
            throw .failed("the objects are more than one reply can carry: read their properties one by one")
        }
        return reply
    }

    /// Tells ObjectManager clients that the objects at `paths` now have `interface`.
    func objectsAdded(_ paths: [String], _ interface: String) {
        for path in paths {
            emit(
                ProviderInterface.objectManager, "InterfacesAdded", from: ProviderInterface.servicePath,
                Variant.tuple([Variant.objectPath(path), interfaces(interface, at: path)]))
        }
    }

    /// Tells ObjectManager clients that the objects at `paths` are gone.
    func objectsRemoved(_ paths: [String], _ interface: String) {
        for path in paths {
            emit(
                ProviderInterface.objectManager, "InterfacesRemoved", from: ProviderInterface.servicePath,
                Variant.tuple([
                    Variant.objectPath(path),
                    Variant.array(of: keychain_cli_type_string(), [Variant.string(interface)]),
                ]))
        }
    }

    /// One object's entry, already serialized: a tree of GVariants costs far more memory than
    /// its bytes (the reply for 10,000 items doubled serve's peak memory), and GLib frees the
    /// tree once the value is serialized.
    private func managedObject(_ path: String, _ interface: String) -> OpaquePointer {
        let entry = g_variant_new_dict_entry(Variant.objectPath(path), interfaces(interface, at: path))!
        _ = g_variant_get_data(entry)
        return entry
    }

    /// `a{sa{sv}}`: `interface` with its properties at `path`.
    private func interfaces(_ interface: String, at path: String) -> OpaquePointer {
        let values: [(String, OpaquePointer)]
        if interface == ProviderInterface.item, let item = index.item(at: path) {
            values = Self.propertyNames(interface).compactMap { name in itemProperty(name, of: item).map { (name, $0) }
            }
        } else {
            values = Self.propertyNames(interface).compactMap { name in
                property(interface, name, at: path).map { (name, $0) }
            }
        }
        return Variant.array(
            of: keychain_cli_type_interface_entry(),
            [g_variant_new_dict_entry(Variant.string(interface), Variant.propertyMap(values))!])
    }
}
