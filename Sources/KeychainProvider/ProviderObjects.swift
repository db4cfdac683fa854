internal import CLibSecret
import KeychainDBus
import KeychainStore

// D-Bus's standard ObjectManager on /org/freedesktop/secrets: every object under it (the
// collections, the default alias, the items, the sessions) with its properties in one reply, and
// InterfacesAdded/InterfacesRemoved as objects come and go. keychain-cli's own Secret Service
// backend lists a large collection with it: one call where other providers take four
// Properties.Get calls per item.
extension SecretServiceProvider {
    /// The reply to GetManagedObjects, `(a{oa{sa{sv}}})`, unless it would be larger than a bus
    /// takes (then the client asks each object, as it does of other providers).
    func managedObjects() throws(ProviderError) -> OwnedVariant {
        var objects = (collections.map(\.path) + [ServedCollection.defaultAliasPath]).map {
            managedObject($0, ProviderInterface.collection)
        }
        for collection in collections {
            objects += collection.itemPaths.map { managedObject($0, ProviderInterface.item) }
        }
        objects += sessions.keys.sorted().map { managedObject($0, ProviderInterface.session) }
        let reply = Variant.tuple([Variant.array(of: keychain_cli_type_managed_object(), objects)])
        guard Variant.fitsInMessage(reply) else {
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

    /// Refuses an item whose label and attributes are more than one message can carry: serve
    /// could not announce it (InterfacesAdded), nor answer its properties, and the bus drops a
    /// connection that sends a message over its limits.
    func requireAnnounceable(_ details: ItemDetails, in collection: ServedCollection) throws(ProviderError) {
        let item = ServedItem(
            number: Int.max, address: ProviderIndex().otherAddress(), storedDetails: details, created: 0, modified: 0,
            revision: 0)
        let announcement = Variant.tuple([
            Variant.objectPath(collection.path(of: item.number)),
            Self.interfaceEntry(ProviderInterface.item, Self.itemProperties(item, in: collection)),
        ])
        guard Variant.fitsInMessage(announcement) else {
            throw .invalidArguments("the item's label and attributes are more than one D-Bus message can carry")
        }
    }

    /// One object's entry, already serialized: a tree of GVariants costs far more memory than
    /// its bytes (the reply for 10,000 items doubled serve's peak memory), and GLib frees the
    /// tree once the value is serialized.
    private func managedObject(_ path: String, _ interface: String) -> OwnedVariant {
        let entry = Variant.entry(Variant.objectPath(path), interfaces(interface, at: path))
        _ = g_variant_get_data(entry.raw)
        return entry
    }

    /// `a{sa{sv}}`: `interface` with its properties at `path`.
    private func interfaces(_ interface: String, at path: String) -> OwnedVariant {
        if interface == ProviderInterface.item, let (collection, item) = item(at: path) {
            return Self.interfaceEntry(interface, Self.itemProperties(item, in: collection))
        }
        let values = Self.propertyNames(interface).compactMap { name in
            (try? property(interface, name, at: path)).map { (name, $0) }
        }
        return Self.interfaceEntry(interface, values)
    }

    private static func itemProperties(_ item: ServedItem, in collection: ServedCollection) -> [(String, OwnedVariant)]
    {
        propertyNames(ProviderInterface.item).compactMap { name in
            itemProperty(name, of: item, in: collection).map { (name, $0) }
        }
    }

    private static func interfaceEntry(_ interface: String, _ values: [(String, OwnedVariant)]) -> OwnedVariant {
        Variant.array(
            of: keychain_cli_type_interface_entry(),
            [Variant.entry(Variant.string(interface), Variant.propertyMap(values))])
    }
}
