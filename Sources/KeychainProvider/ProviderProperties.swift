internal import CLibSecret
import KeychainDBus
import KeychainStore

// org.freedesktop.DBus.Properties on every object: GDBus hands these calls to the provider's one
// method handler (no getter or setter in the interface table), so that they are answered in
// turn with the other calls, and fail with the same error names.
extension SecretServiceProvider {
    func handlePropertiesCall(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        let interface = call.string(0)
        switch call.method {
        case "Get":
            let name = call.string(1)
            guard let value = try property(interface, name, at: call.path) else {
                throw .invalidArguments("No such property “\(name)”")
            }
            return Variant.tuple([Variant.boxed(value)])
        case "GetAll":
            var values: [(String, OwnedVariant)] = []
            for name in Self.propertyNames(interface) {
                if let value = try property(interface, name, at: call.path) { values.append((name, value)) }
            }
            return Variant.tuple([Variant.propertyMap(values)])
        case "Set":
            try setProperty(interface, call.string(1), to: call.argument(2).unboxed, at: call.path, by: call)
            return Variant.tuple([])
        default:
            throw .notSupported("org.freedesktop.DBus.Properties.\(call.method) is not supported")
        }
    }

    /// The properties each interface has, in the order of the introspection data.
    static func propertyNames(_ interface: String) -> [String] {
        switch interface {
        case ProviderInterface.service: ["Collections"]
        case ProviderInterface.collection: ["Items", "Label", "Locked", "Created", "Modified"]
        case ProviderInterface.item: ["Locked", "Attributes", "Label", "Type", "Created", "Modified"]
        default: []
        }
    }

    /// The property `name` of `interface` at `path`; nil for a property it does not have.
    /// - Throws: `unknownObject` when no such object exists (now).
    func property(_ interface: String, _ name: String, at path: String) throws(ProviderError) -> OwnedVariant? {
        switch interface {
        case ProviderInterface.service:
            return name == "Collections" ? Variant.objectPaths(collections.map(\.path)) : nil
        case ProviderInterface.collection:
            guard let collection = collection(at: path) else { throw .unknownObject(path) }
            switch name {
            case "Items": return Variant.objectPaths(collection.itemPaths)
            case "Label": return Variant.string(collection.label)
            case "Locked": return Variant.boolean(collection.locked)
            case "Created": return Variant.uint64(collection.created)
            case "Modified": return Variant.uint64(collection.modified)
            default: return nil
            }
        case ProviderInterface.item:
            guard let (collection, item) = item(at: path) else { throw .unknownObject(path) }
            return Self.itemProperty(name, of: item, in: collection)
        case ProviderInterface.session:
            guard sessions[path] != nil else { throw .unknownObject(path) }
            return nil
        default:
            return nil
        }
    }

    static func itemProperty(_ name: String, of item: ServedItem, in collection: ServedCollection) -> OwnedVariant? {
        switch name {
        case "Locked": Variant.boolean(collection.locked)
        case "Attributes": Variant.stringMap(item.details.attributes)
        case "Label": Variant.string(item.details.label)
        case "Type": Variant.string(item.attribute("xdg:schema") ?? "")
        case "Created": Variant.uint64(item.created)
        case "Modified": Variant.uint64(item.modified)
        default: nil
        }
    }

    /// Sets a writable property (GDBus has checked that it is one, and the value's type): a
    /// collection's label (kept in its store, so that the login collection's outlives serve), an
    /// item's label, attributes or type (its xdg:schema attribute, which gnome-keyring lets clients
    /// set though the specification has no Type).
    private func setProperty(
        _ interface: String, _ name: String, to value: OwnedVariant, at path: String, by call: ProviderCall
    ) throws(ProviderError) {
        if interface == ProviderInterface.collection {
            guard let collection = collection(at: path) else { throw .unknownObject(path) }
            try requireUnlocked(collection)
            let label = value.string
            try backend { () throws(KeychainError) in try collection.store.setCollectionLabel(label) }
            collection.label = label
            return propertiesChanged(interface, ["Label"], at: collection.path)
        }
        guard let (collection, item) = item(at: path) else { throw .noSuchObject("no item \(path)") }
        try requireUnlocked(collection)
        var details = item.details
        switch name {
        case "Label": details.label = value.string
        case "Attributes": details.attributes = Variant.strings(value)
        case "Type": details.attributes["xdg:schema"] = value.string  // as gnome-keyring
        default: throw .notSupported("\(name) cannot be set")
        }
        // Logged before it is changed, where the item is (new attributes may move it).
        try check(.write, item.address, by: call)
        try change(item, in: collection, to: details, path: path)
    }
}
