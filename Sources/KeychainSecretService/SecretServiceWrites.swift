internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

// `set` on the session bus directly, as `get` reads: the encrypted session of ``SecretSession``
// (kept per bus), a search, then `Item.SetSecret` on each item found, or
// `Collection.CreateItem` in the default collection. libsecret's store builds its service proxy
// first (seven more calls) and opens its session with a 1,024-bit exponent.
extension SecretServiceStore {
    /// Stores `secret` under `service` and `key` without libsecret; false when that cannot be done
    /// here and libsecret must: a found item is locked (libsecret unlocks, and may prompt), the
    /// service offers no encrypted session, there is no default collection, it is locked, or
    /// creating the item needs a prompt.
    func setSecretDirectly(
        _ secret: Data, service: ServiceName, key: KeychainKey, _ operation: BoundedOperation
    ) throws -> Bool {
        try connection.sessionBus(operation, preparingSession: true).use {
            try setSecretDirectly(secret, service: service, key: key, operation, $0)
        }
    }

    private func setSecretDirectly(
        _ secret: Data, service: ServiceName, key: KeychainKey, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> Bool {
        // A write always needs the session: OpenSession is sent right behind the search, so the
        // service answers both in one round trip, and the session's key is derived while the
        // search's answer is on its way. (A locked item found leaves the session unused.) The
        // search goes first: gnome-keyring 42 sometimes aborts (a failed assertion on a client it
        // does not know yet) when a new connection's first call is OpenSession (measured: 1 `set`
        // in about 1,500 killed the daemon; secret-tool, whose first calls go elsewhere, none).
        let pairs: KeyValuePairs = ["service": service.rawValue, "username": key.rawValue]
        var search: SecretServiceConnection.PendingSearch? = try connection.beginSearch(operation, bus, pairs)
        func store(in session: SecretSession) throws -> Bool {
            let pending = try search ?? connection.beginSearch(operation, bus, pairs)
            search = nil
            session.deriveKey()
            let found = try connection.endSearch(pending)
            guard found.locked.isEmpty else { return false }
            // An item another tool stored under the same service and key (with other extra
            // attributes) gets the new secret in place, so every tool sees one value; an item
            // deleted since the search is skipped. Watchers are told while SetSecret is answered
            // (a SetSecret that fails leaves them a `changed` for an unchanged item).
            var updated = 0
            for path in found.unlocked {
                var announcement: BoundedOperation.PendingCall?
                let stored = try putSecret(secret, at: path, in: session, operation, bus) {
                    announcement = beginAnnouncingSecretChanged(at: path, bus, operation)
                }
                if let announcement { try finishAnnouncement(announcement, bus, operation) }
                if stored { updated += 1 }
            }
            if updated > 0 { return true }
            return try createItem(
                secret, attributes: newItemAttributes(service: service, key: key),
                label: ItemInfo.defaultLabel(service: service, key: key), contentType: "application/octet-stream",
                in: session, operation, bus)
        }
        let stored = try connection.inSession(operation, bus, store(in:))
        return stored ?? false
    }

    /// The attributes of an item `set` creates, as libsecret's store gives them for our schema
    /// (`xdg:schema` its name), on either way to the bus.
    func newItemAttributes(service: ServiceName, key: KeychainKey) -> [(String, String)] {
        [
            ("service", service.rawValue), ("username", key.rawValue), ("application", "keychain-cli"),
            ("xdg:schema", String(cString: connection.schema.pointee.name)),
        ]
    }

    /// `Item.SetSecret` of the item at `path`; false when the item is gone. `meanwhile` runs once
    /// the request is sent.
    private func putSecret(
        _ secret: Data, at path: String, in session: SecretSession, _ operation: BoundedOperation,
        _ bus: OpaquePointer, meanwhile: () -> Void
    ) throws -> Bool {
        // org.freedesktop.Secret.Item.SetSecret((oayays) secret)
        let reply = try operation.callItemMethod(
            bus, SecretServiceConnection.busName, path, "org.freedesktop.Secret.Item", "SetSecret",
            .tuple([try secretVariant(secret, session)]), meanwhile: meanwhile)
        return reply != nil
    }

    /// Stores `secret` in the default collection as libsecret's `secret_password_storev` does (a
    /// new item with `attributes`, `label` and `contentType`, replacing one with the same
    /// attributes), but in keychain-cli's own session (see ``SecretSession``); false when libsecret
    /// must do it (see ``createItem(_:attributes:label:contentType:in:_:_:)``).
    func storeDirectly(
        _ secret: Data, attributes: [(String, String)], label: String, contentType: String,
        _ operation: BoundedOperation
    ) throws -> Bool {
        let stored = try connection.sessionBus(operation, preparingSession: true).use { bus in
            try connection.inSession(operation, bus) { session in
                try createItem(
                    secret, attributes: attributes, label: label, contentType: contentType, in: session, operation, bus)
            }
        }
        return stored ?? false
    }

    /// `Collection.CreateItem` in the default collection (its alias path), with `attributes` and
    /// `label` (libsecret's store gives the schema's name as `xdg:schema`), replacing an item
    /// with the same attributes; false when libsecret must do it (no default collection, a locked
    /// one, a prompt asked for).
    private func createItem(
        _ secret: Data, attributes: [(String, String)], label: String, contentType: String,
        in session: SecretSession, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> Bool {
        // Encrypted first: a session whose key cannot be derived throws before any value is built.
        let sealed = try secretVariant(secret, session, contentType: contentType)
        // The default collection by its alias path, as libsecret's store addresses it: no ReadAlias.
        let collection = "/org/freedesktop/secrets/aliases/default"
        let attributes = attributes.map {
            g_variant_new_dict_entry(g_variant_new_string($0.0), g_variant_new_string($0.1))
        }
        let properties = [
            ("org.freedesktop.Secret.Item.Label", g_variant_new_string(label)),
            (
                "org.freedesktop.Secret.Item.Attributes",
                g_variant_new_array(keychain_cli_type_string_pair(), attributes, gsize(attributes.count))
            ),
        ].map { g_variant_new_dict_entry(g_variant_new_string($0.0), g_variant_new_variant($0.1)) }
        let parameters = OwnedVariant.tuple([
            OwnedVariant(
                sinking: g_variant_new_array(keychain_cli_type_property_pair(), properties, gsize(properties.count))),
            sealed, OwnedVariant(sinking: g_variant_new_boolean(1)),
        ])
        // org.freedesktop.Secret.Collection.CreateItem(a{sv} properties, (oayays) secret, b replace)
        //   -> (o item, o prompt)
        let reply = try operation.call(
            { cancellable, callback, data in
                parameters.use {
                    g_dbus_connection_call(
                        bus, SecretServiceConnection.busName, collection, "org.freedesktop.Secret.Collection",
                        "CreateItem", $0, keychain_cli_type_create_item_reply(), G_DBUS_CALL_FLAGS_NONE, -1,
                        cancellable, callback, data)
                }
            },
            finish: { result, error in
                let reply = OwnedVariant(takingIfAny: g_dbus_connection_call_finish(bus, result, error))
                // A locked collection: libsecret unlocks it (with a prompt, within the deadline); no
                // default collection (no object at the alias): libsecret creates one.
                if let failure = error.pointee, remoteErrorName(failure) == "org.freedesktop.Secret.Error.IsLocked" {
                    _ = takeError(error)
                }
                _ = clearingVanishedItemError(error)
                return reply
            })
        guard let reply else { return false }
        // A prompt would have to be shown before the item exists: left to libsecret.
        return reply.child(1).string == "/"
    }

    /// The `(oayays)` secret struct: session, IV, ciphertext, content type.
    private func secretVariant(
        _ secret: Data, _ session: SecretSession, contentType: String = "application/octet-stream"
    ) throws -> OwnedVariant {
        let (parameters, value) = try session.encrypt(secret)
        return .tuple([
            g_variant_new_object_path(session.path), byteArrayVariant(parameters), byteArrayVariant(value),
            g_variant_new_string(contentType),
        ])
    }
}
