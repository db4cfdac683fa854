import CLibSecret
import FoundationEssentials

// The Collection and Item interfaces: every write goes to the backend before the reply.
extension SecretServiceProvider {
    func handleItemCall(_ call: ProviderCall) throws(ProviderError) -> OpaquePointer {
        switch (call.interface, call.method) {
        case (ProviderInterface.collection, "SearchItems"):
            let found = index.search(attributesArgument(call, 0)).map { ProviderIndex.path(of: $0.number) }
            return Variant.tuple([Variant.objectPaths(found)])
        case (ProviderInterface.collection, "CreateItem"): return try createItem(call)
        case (ProviderInterface.collection, "Delete"):
            throw .notSupported("keychain-cli serve keeps one collection; delete its items instead")
        case (ProviderInterface.item, "GetSecret"):
            let item = try servedItem(call.path)
            let session = try session(call.string(0), for: call)
            guard !locked else { throw .isLocked("the collection is locked: call Unlock first") }
            guard
                let secret = try backend({ () throws(KeychainError) in
                    try store.secret(service: item.address.service, key: item.address.key)
                })
            else { throw .noSuchObject("\(call.path) was deleted by another program") }
            return Variant.tuple([try session.encode(secret, contentType: item.details.contentType)])
        case (ProviderInterface.item, "SetSecret"):
            var item = try servedItem(call.path)
            let argument = call.argument(0)
            defer { g_variant_unref(argument) }
            let session = try session(variantString(argument, child: 0), for: call)
            guard !locked else { throw .isLocked("the collection is locked: call Unlock first") }
            let (secret, contentType) = try session.decode(argument)
            item.details.contentType = contentType
            try store(item, secret: secret)
            return Variant.tuple([])
        case (ProviderInterface.item, "Delete"):
            let item = try servedItem(call.path)
            guard !locked else { throw .isLocked("the collection is locked: call Unlock first") }
            _ = try backend { () throws(KeychainError) in
                try store.deleteSecret(service: item.address.service, key: item.address.key)
            }
            index.remove(item.number)
            unregister(ProviderIndex.path(of: item.number))
            announce(deleted: [item.number])
            return Variant.tuple([Variant.objectPath("/")])
        default:
            throw .notSupported("\(call.interface).\(call.method) is not supported")
        }
    }

    private func createItem(_ call: ProviderCall) throws(ProviderError) -> OpaquePointer {
        let propertiesArgument = call.argument(0)
        let properties = Variant.properties(propertiesArgument)
        g_variant_unref(propertiesArgument)
        defer { for value in properties.values { g_variant_unref(value) } }
        let secretArgument = call.argument(1)
        defer { g_variant_unref(secretArgument) }
        let replaceArgument = call.argument(2)
        let replace = g_variant_get_boolean(replaceArgument) != 0
        g_variant_unref(replaceArgument)

        let session = try session(variantString(secretArgument, child: 0), for: call)
        guard !locked else { throw .isLocked("the collection is locked: call Unlock first") }
        var attributes: [String: String] = [:]
        if let value = properties["org.freedesktop.Secret.Item.Attributes"] {
            guard Variant.has(value, type: keychain_cli_type_string_map()) else {
                throw .invalidArguments("org.freedesktop.Secret.Item.Attributes must be a{ss}")
            }
            attributes = Variant.strings(value)
        }
        var label = ""
        if let value = properties["org.freedesktop.Secret.Item.Label"] {
            guard Variant.has(value, type: keychain_cli_type_string()) else {
                throw .invalidArguments("org.freedesktop.Secret.Item.Label must be a string")
            }
            label = Variant.text(value)
        }
        let (secret, contentType) = try session.decode(secretArgument)
        let details = ItemDetails(attributes: attributes, label: label, contentType: contentType)
        let now = UInt64(Date().timeIntervalSince1970)
        // Replacing: the item with exactly these attributes, else the item that is the backend's
        // item (service, username) these attributes name (one written by `set`, say): the backend
        // has one item there, so a replacing write changes it rather than hide it behind another.
        let replaced =
            index.search(attributes).first { $0.details.attributes == attributes }
            ?? ProviderIndex.nativeAddress(attributes).flatMap { index.holder(of: $0) }
        if replace, var item = replaced {
            item.details = details
            try store(item, secret: secret)
            return Variant.tuple([Variant.objectPath(ProviderIndex.path(of: item.number)), Variant.objectPath("/")])
        }
        let address = try write(secret, details, at: index.placement(for: attributes))
        let number = index.put(address: address, details: details, created: now, modified: now)
        do {
            try register(ProviderIndex.path(of: number), ProviderInterface.item)
        } catch {
            throw .failed(error.description)
        }
        announce(created: [number])
        return Variant.tuple([Variant.objectPath(ProviderIndex.path(of: number)), Variant.objectPath("/")])
    }

    /// Writes `item` with `secret` (nil: its current secret) to the backend, moving it when its
    /// new attributes name another service and username, and tells clients it changed.
    func store(_ item: ServedItem, secret given: Data? = nil) throws(ProviderError) {
        let secret: Data
        if let given {
            secret = given
        } else {
            guard
                let current = try backend({ () throws(KeychainError) in
                    try store.secret(service: item.address.service, key: item.address.key)
                })
            else { throw .noSuchObject("the item was deleted by another program") }
            secret = current
        }
        // New attributes may name another backend item: the item moves there (written first,
        // then removed from where it was).
        let address = try write(secret, item.details, at: index.placement(for: item.details.attributes, of: item))
        if address != item.address {
            _ = try backend { () throws(KeychainError) in
                try store.deleteSecret(service: item.address.service, key: item.address.key)
            }
        }
        index.remove(item.number)
        index.put(
            address: address, details: item.details, created: item.created,
            modified: UInt64(Date().timeIntervalSince1970), number: item.number)
        announce(changed: [item.number])
        propertiesChanged(
            ProviderInterface.item, ["Attributes", "Label", "Modified"], at: [ProviderIndex.path(of: item.number)])
    }

    /// Stores `secret` and `details` at `address`, or, when the backend cannot hold that name (a
    /// service OpenBao cannot make a path of, a reserved key), under a new key of
    /// ``ProviderIndex/otherItemsService``; returns where it went.
    func write(_ secret: Data, _ details: ItemDetails, at address: SecretAddress) throws(ProviderError)
        -> SecretAddress
    {
        var address = address
        do {
            try store.setSecret(secret, details: details, service: address.service, key: address.key)
        } catch .invalidName where address.service.rawValue != ProviderIndex.otherItemsService {
            address = index.otherAddress()
            try backend { () throws(KeychainError) in
                try store.setSecret(secret, details: details, service: address.service, key: address.key)
            }
        } catch {
            throw .failed(error.description)
        }
        return address
    }

    func servedItem(_ path: String) throws(ProviderError) -> ServedItem {
        guard let item = index.item(at: path) else { throw .noSuchObject("no item \(path)") }
        return item
    }

    /// Runs a backend operation, its failure answered as org.freedesktop.DBus.Error.Failed with
    /// the library's description (never a secret).
    func backend<Result>(_ body: () throws(KeychainError) -> Result) throws(ProviderError) -> Result {
        do {
            return try body()
        } catch {
            throw .failed(error.description)
        }
    }

    // MARK: Properties

    func property(_ interface: String, _ name: String, at path: String) -> OpaquePointer? {
        switch (interface, name) {
        case (ProviderInterface.service, "Collections"): return Variant.objectPaths([ProviderIndex.collectionPath])
        case (ProviderInterface.collection, "Items"):
            return Variant.objectPaths(index.items.keys.sorted().map(ProviderIndex.path(of:)))
        case (ProviderInterface.collection, "Label"): return Variant.string(collectionLabel)
        case (ProviderInterface.collection, "Locked"):
            return Variant.boolean(locked)
        case (ProviderInterface.collection, "Created"): return Variant.uint64(started)
        case (ProviderInterface.collection, "Modified"):
            return Variant.uint64(index.items.values.map(\.modified).max() ?? started)
        default: break
        }
        guard interface == ProviderInterface.item, let item = index.item(at: path) else { return nil }
        return itemProperty(name, of: item)
    }

    func itemProperty(_ name: String, of item: ServedItem) -> OpaquePointer? {
        switch name {
        case "Locked": return Variant.boolean(locked)
        case "Attributes": return Variant.stringMap(item.details.attributes)
        case "Label": return Variant.string(item.details.label)
        case "Type": return Variant.string(item.details.attributes["xdg:schema"] ?? "")
        case "Created": return Variant.uint64(item.created)
        case "Modified": return Variant.uint64(item.modified)
        default: return nil
        }
    }

    func setProperty(_ interface: String, _ name: String, to value: OpaquePointer, at path: String)
        throws(ProviderError)
    {
        if interface == ProviderInterface.collection && name == "Label" {
            collectionLabel = Variant.text(value)
            return propertiesChanged(interface, ["Label"], at: [ProviderIndex.collectionPath, ProviderIndex.aliasPath])
        }
        var item = try servedItem(path)
        guard !locked else { throw .isLocked("the collection is locked: call Unlock first") }
        switch name {
        case "Label": item.details.label = Variant.text(value)
        case "Attributes": item.details.attributes = Variant.strings(value)
        default: throw .notSupported("\(name) cannot be set")
        }
        try store(item)
    }
}
