internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore

// The Collection and Item interfaces. Every write goes to the collection's store before the
// reply, and decides what it overwrites on what the store holds then (addItem, updateItem):
// the index is only a view, which another process's write may have outdated.
extension SecretServiceProvider {
    func handleCollectionCall(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        guard let collection = collection(at: call.path) else { throw .unknownObject(call.path) }
        switch call.method {
        case "SearchItems":
            let found = collection.index.search(attributesArgument(call, 0)).map { collection.path(of: $0.number) }
            return Variant.tuple([Variant.objectPaths(found)])
        case "CreateItem": return try createItem(call, in: collection)
        case "Delete":
            throw .notSupported("this provider's collections cannot be deleted: delete their items instead")
        default:
            throw .notSupported("\(call.interface).\(call.method) is not supported")
        }
    }

    func handleItemCall(_ call: ProviderCall) throws(ProviderError) -> OwnedVariant {
        guard let (collection, item) = item(at: call.path) else { throw .unknownObject(call.path) }
        switch call.method {
        case "GetSecret":
            let session = try session(call.string(0), for: call)
            try requireUnlocked(collection)
            try check(.read, item.address, by: call)
            guard
                let secret = try backend({ () throws(KeychainError) in
                    try collection.store.secret(service: item.address.service, key: item.address.key)
                })
            else {
                forget(item, in: collection)
                throw .unknownObject(call.path)
            }
            secretObserver?(secret)
            return Variant.tuple([try session.encode(secret, contentType: item.details.contentType)])
        case "SetSecret":
            let argument = call.argument(0)
            let session = try session(argument.child(0).string, for: call)
            try requireUnlocked(collection)
            let (secret, contentType) = try session.decode(argument)
            secretObserver?(secret)
            try check(.write, item.address, by: call)
            try rewrite(item, in: collection, path: call.path) { current in
                guard item.isStored(with: current.details) else { return nil }
                var details = current.details ?? item.details
                details.contentType = contentType
                return ItemContents(secret: secret, details: details)
            }
            return Variant.tuple([])
        case "Delete":
            try requireUnlocked(collection)
            try check(.delete, item.address, by: call)
            // Only this item: not one another program stored there after deleting it.
            let deleted = try backend { () throws(KeychainError) in
                try collection.store.deleteItem(at: item.address) { item.isStored(with: $0.details) }
            }
            forget(item, in: collection)
            guard deleted else { throw .unknownObject(call.path) }
            return Variant.tuple([Variant.objectPath("/")])
        default:
            throw .notSupported("\(call.interface).\(call.method) is not supported")
        }
    }

    private func createItem(_ call: ProviderCall, in collection: ServedCollection) throws(ProviderError)
        -> OwnedVariant
    {
        let properties = Variant.properties(call.argument(0))
        let secretArgument = call.argument(1)
        let replace = call.argument(2).boolean
        let session = try session(secretArgument.child(0).string, for: call)
        try requireUnlocked(collection)
        // gnome-keyring refuses the properties it does not know, and so does serve.
        if let unknown = properties.keys.sorted().first(where: { !Self.creatable.contains($0) }) {
            throw .invalidArguments("CreateItem does not take the property \(unknown)")
        }
        var attributes = try Self.value(properties, "Attributes", "a{ss}", Variant.strings) ?? [:]
        let label = try Self.value(properties, "Label", "s", \.string) ?? ""
        // The item's type is its xdg:schema attribute, as gnome-keyring keeps it.
        if let type = try Self.value(properties, "Type", "s", \.string),
            attributes["xdg:schema"] == nil
        {
            attributes["xdg:schema"] = type
        }
        let (secret, contentType) = try session.decode(secretArgument)
        secretObserver?(secret)
        let details = ItemDetails(attributes: attributes, label: label, contentType: contentType)
        try requireAnnounceable(details, in: collection)
        // Replacing: the item with exactly these attributes, else the item that is the store's
        // item (service, username) these attributes name (one written by `set`, say): the store
        // has one item there, so a replacing write changes it rather than hide it behind another.
        let existing =
            replace
            ? collection.index.search(attributes).first(where: { $0.details.attributes == attributes })
                ?? ProviderIndex.nativeAddress(attributes).flatMap({ collection.index.holder(of: $0) }) : nil
        // Logged before it is stored (a log that cannot be written stores nothing): where it goes,
        // as far as is known before (an item with no service and username: a new key of
        // secret-service, logged as `(new)`).
        try check(
            .write, existing?.address ?? ProviderIndex.nativeAddress(attributes) ?? ProviderIndex.newOtherAddress,
            by: call)
        if let existing {
            let update = try backend { () throws(KeychainError) in
                try collection.store.updateItem(at: existing.address, movingTo: nil) { current in
                    existing.isStored(with: current.details) ? ItemContents(secret: secret, details: details) : nil
                }
            }
            if case .updated(let stored) = update {
                updated(existing, stored, in: collection)
                return Variant.tuple([
                    Variant.objectPath(collection.path(of: existing.number)), Variant.objectPath("/"),
                ])
            }
            forget(existing, in: collection)
        }
        let number = try add(secret, details, to: collection, replacing: replace)
        return Variant.tuple([Variant.objectPath(collection.path(of: number)), Variant.objectPath("/")])
    }

    /// Stores a new item where its attributes say if nothing is stored there now (or, `replacing`,
    /// over what is), else under a new random key of ``ProviderIndex/otherItemsService``.
    private func add(_ secret: Data, _ details: ItemDetails, to collection: ServedCollection, replacing: Bool)
        throws(ProviderError) -> Int
    {
        if let native = ProviderIndex.nativeAddress(details.attributes) {
            do {
                if let stored = try collection.store.addItem(secret, details: details, at: native) {
                    return adopt(stored, in: collection)
                }
                if replacing {
                    return adopt(
                        try collection.store.setSecret(
                            secret, details: details, service: native.service, key: native.key), in: collection)
                }
            } catch .invalidName {
                // A name the backend cannot hold (a URL as an OpenBao service): kept under secret-service.
            } catch {
                throw .failed(error.description)
            }
        }
        while true {
            let address = collection.index.otherAddress()
            if let stored = try backend({ () throws(KeychainError) in
                try collection.store.addItem(secret, details: details, at: address)
            }) {
                return adopt(stored, in: collection)
            }
        }
    }

    /// Gives `item` the `details` a client set (its label or attributes): it moves to the store's
    /// item its new attributes name if nothing is stored there now, else stays under (or goes to)
    /// ``ProviderIndex/otherItemsService``. Its secret and content type are the store's, as they are
    /// at the moment of the write.
    func change(_ item: ServedItem, in collection: ServedCollection, to details: ItemDetails, path: String)
        throws(ProviderError)
    {
        try requireAnnounceable(details, in: collection)
        let index = collection.index
        var destination = index.preferredAddress(for: details.attributes, of: item) ?? index.otherAddress()
        let fallback = item.address.service.rawValue == ProviderIndex.otherItemsService ? item.address : nil
        while true {
            let update: ItemUpdate
            do {
                update = try collection.store.updateItem(
                    at: item.address, movingTo: destination == item.address ? nil : destination
                ) { current in
                    guard item.isStored(with: current.details) else { return nil }
                    var new = details
                    new.contentType = current.details?.contentType ?? item.details.contentType
                    return ItemContents(secret: current.secret, details: new)
                }
            } catch .invalidName where destination.service.rawValue != ProviderIndex.otherItemsService {
                destination = fallback ?? index.otherAddress()
                continue
            } catch {
                throw .failed(error.description)
            }
            switch update {
            case .updated(let stored): return updated(item, stored, in: collection)
            case .missing:
                forget(item, in: collection)
                throw .noSuchObject("no item \(path)")
            case .destinationTaken:
                // Another writer stored an item there since the index last looked.
                destination = fallback ?? index.otherAddress()
            }
        }
    }

    /// Rewrites `item` in place from what the store holds now.
    private func rewrite(
        _ item: ServedItem, in collection: ServedCollection, path: String,
        _ change: (ItemContents) -> ItemContents?
    ) throws(ProviderError) {
        let update = try backend { () throws(KeychainError) in
            try collection.store.updateItem(at: item.address, movingTo: nil, change)
        }
        guard case .updated(let stored) = update else {
            forget(item, in: collection)
            throw .unknownObject(path)
        }
        updated(item, stored, in: collection)
    }

    /// Puts a new item the store answered in the index and announces it.
    private func adopt(_ stored: DetailedItem, in collection: ServedCollection) -> Int {
        let (number, displaced) = collection.index.put(stored)
        announce(collection, created: [number], deleted: displaced.map { [$0] } ?? [])
        return number
    }

    /// Puts what the store answered for `item` in the index and announces the change.
    private func updated(_ item: ServedItem, _ stored: DetailedItem, in collection: ServedCollection) {
        let displaced = collection.index.put(stored, as: item.number).displaced
        announce(collection, changed: [item.number], deleted: displaced.map { [$0] } ?? [])
        propertiesChanged(
            ProviderInterface.item, ["Attributes", "Label", "Modified"], at: collection.path(of: item.number))
    }

    /// Drops an item the store no longer has (deleted by a client, or by another program).
    private func forget(_ item: ServedItem, in collection: ServedCollection) {
        guard collection.index.items[item.number] != nil else { return }
        collection.index.remove(item.number)
        announce(collection, deleted: [item.number])
    }

    func requireUnlocked(_ collection: ServedCollection) throws(ProviderError) {
        guard !collection.locked else { throw .isLocked("the collection is locked: call Unlock first") }
    }

    /// The properties CreateItem takes (an item's `Locked` is its collection's: ignored).
    private static let creatable = Set(
        ["Attributes", "Label", "Type", "Locked"].map { "org.freedesktop.Secret.Item.\($0)" })

    /// The property `name` of CreateItem's properties (`org.freedesktop.Secret.Item.NAME`), of
    /// type `signature`, read by `read`; nil when not given.
    private static func value<Value>(
        _ properties: [String: OwnedVariant], _ name: String, _ signature: String, _ read: (OwnedVariant) -> Value
    ) throws(ProviderError) -> Value? {
        guard let value = properties["org.freedesktop.Secret.Item.\(name)"] else { return nil }
        guard value.typeString == signature else {
            throw .invalidArguments("org.freedesktop.Secret.Item.\(name) must be of type \(signature)")
        }
        return read(value)
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
}
