import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

// `set` on the direct connection (see SecretServiceDirect.swift), as SecretServiceWrites.swift
// does it on GDBus: SearchItems and OpenSession in one round trip, then `Item.SetSecret` on each
// item found, or `Collection.CreateItem` in the default collection.
extension SecretServiceStore {
    /// Stores `secret` under `service` and `key` on the direct connection: true when stored; false
    /// when libsecret must (a found item is locked, the service offers no encrypted session, there
    /// is no default collection, it is locked, or creating the item needs a prompt: the same cases
    /// in which ``setSecretDirectly(_:service:key:_:)`` returns false); nil when this way cannot be
    /// taken (not a Unix socket, a bus that refuses us).
    func setSecretOnDirectBus(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool? {
        let pairs: KeyValuePairs = ["service": service.rawValue, "username": key.rawValue]
        return try connection.onDirectBus(what: "store the secret", seconds: timeout) {
            bus throws -> Bool in
            let found = try SecretServiceConnection.searchResult(
                connection.sendSearch(pairs, on: bus), pairs.map { ($0.key, $0.value) }, on: bus.wire)
            guard found.locked.isEmpty else { return false }
            return try connection.inDirectSession(bus) { session throws -> Bool in
                // An item another tool stored under the same service and key (with other extra
                // attributes) gets the new secret in place; an item deleted since the search is
                // skipped.
                var updated = false
                for path in found.unlocked where try putSecret(secret, at: path, session, bus.wire) {
                    updated = true
                }
                if updated { return true }
                return try createItem(
                    secret, attributes: newItemAttributes(service: service, key: key),
                    label: ItemInfo.defaultLabel(service: service, key: key), session, bus.wire)
            } ?? false
        }
    }

    /// `Item.SetSecret` of the item at `path`; false when the item is gone. Watchers are told
    /// (``SecretServiceStore/secretChangedSignal``) while SetSecret is answered, and a Ping to the
    /// bus behind it returns once the bus has the signal.
    private func putSecret(_ secret: Data, at path: String, _ session: SecretSession, _ wire: BusWire)
        throws -> Bool
    {
        let sealed = try session.seal(secret)
        // org.freedesktop.Secret.Item.SetSecret((oayays) secret)
        let set = try wire.call(
            SecretServiceConnection.busName, path, "org.freedesktop.Secret.Item", "SetSecret", signature: "(oayays)"
        ) {
            $0.secret(session, sealed, contentType: "application/octet-stream")
        }
        let stored = try connection.answerUnlessVanished(wire.reply(to: set), "", wire) != nil
        if stored {
            let (interface, member) = Self.secretChangedSignal
            wire.signal(path, interface, member)
            // org.freedesktop.DBus.Peer.Ping() -> ()
            let ping = try wire.call(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping")
            _ = try connection.answer(wire.reply(to: ping), "", wire)
        }
        return stored
    }

    /// `Collection.CreateItem` in the default collection (its alias path), replacing an item with
    /// the same attributes; false when the GLib way must (no default collection, a locked one, a
    /// prompt asked for).
    private func createItem(
        _ secret: Data, attributes: [(String, String)], label: String, _ session: SecretSession, _ wire: BusWire
    ) throws -> Bool {
        let sealed = try session.seal(secret)
        // org.freedesktop.Secret.Collection.CreateItem(a{sv} properties, (oayays) secret, b replace)
        //   -> (o item, o prompt)
        let create = try wire.call(
            SecretServiceConnection.busName, "/org/freedesktop/secrets/aliases/default",
            "org.freedesktop.Secret.Collection",
            "CreateItem", signature: "a{sv}(oayays)b"
        ) { body in
            body.array(alignment: 8) { properties in
                properties.align(8)
                properties.string("org.freedesktop.Secret.Item.Label")
                properties.signature("s")
                properties.string(label)
                properties.align(8)
                properties.string("org.freedesktop.Secret.Item.Attributes")
                properties.signature("a{ss}")
                properties.stringDictionary(attributes)
            }
            body.secret(session, sealed, contentType: "application/octet-stream")
            body.boolean(true)
        }
        let reply = try wire.reply(to: create)
        if reply.errorName == "org.freedesktop.Secret.Error.IsLocked" { return false }
        guard var created = try connection.answerUnlessVanished(reply, "oo", wire) else { return false }
        _ = try created.string()
        // A prompt would have to be shown before the item exists: left to the GLib way.
        return try created.string() == "/"
    }
}
