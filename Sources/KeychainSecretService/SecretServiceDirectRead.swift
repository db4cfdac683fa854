import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

// `get` on the direct connection (see SecretServiceDirect.swift): SearchItems and OpenSession in
// one round trip, then GetSecret.
extension SecretServiceConnection {
    /// The secret of the item with attributes `pairs` read directly: `.some(nil)` when there is
    /// none; nil when this way cannot answer and the caller reads the GLib way.
    func readDirectly(_ pairs: KeyValuePairs<String, String>, what: String, seconds: Double) throws(KeychainError)
        -> Data??
    {
        try onDirectBus(what: what, seconds: seconds) { bus throws -> Data?? in
            let search = try sendSearch(pairs, on: bus)
            let found = try searchResult(search, pairs, bus.wire)
            guard !found.unlocked.isEmpty else {
                // Unlocking may prompt: libsecret's way. A default keyring that is locked and shows
                // no item hides the one asked for: say so rather than "not found".
                if !found.locked.isEmpty { return nil }
                if try hidesItemsWhileLocked(bus.wire) {
                    throw KeychainError.locked(
                        detail: "the default keyring is locked and hides its items until it is unlocked")
                }
                return .some(nil)
            }
            for path in found.unlocked {
                switch try inDirectSession(
                    bus, { session throws in try secret(at: path, bus.wire, session) })
                {
                case .none: return nil
                case .some(.none): continue
                case .some(.some(let secret)): return secret
                }
            }
            // Each item found was deleted meanwhile: the locked ones are left, or none.
            return found.locked.isEmpty ? .some(nil) : nil
        }
    }

    /// The secret of the item at `path` in `session`; nil when the item was deleted after the search.
    private func secret(at path: String, _ wire: BusWire, _ session: SecretSession) throws -> Data? {
        // org.freedesktop.Secret.Item.GetSecret(o session) -> ((oayays) secret)
        let get = try wire.call(Self.busName, path, "org.freedesktop.Secret.Item", "GetSecret", signature: "o") {
            $0.string(session.path)
        }
        session.deriveKey()
        guard var reply = try answerUnlessVanished(wire.reply(to: get), "(oayays)", wire) else { return nil }
        let secret = try session.open(&reply)
        return try confirmingEmpty(secret, at: path, wire)
    }

    /// Whether the default collection is locked and shows no item (as ``searchVisiblePaths``).
    private func hidesItemsWhileLocked(_ wire: BusWire) throws -> Bool {
        let alias = "/org/freedesktop/secrets/aliases/default"
        guard var locked = try property(alias, "Collection", "Locked", wire), try locked.signature() == "b",
            try locked.boolean(), var items = try property(alias, "Collection", "Items", wire),
            try items.signature() == "ao"
        else { return false }
        return try items.objectPaths().isEmpty
    }

    /// `secret`, or nil when it is empty and the item at `path` is gone by now (see
    /// ``confirmingEmpty(_:at:_:_:)`` of the GLib way).
    private func confirmingEmpty(_ secret: Data, at path: String, _ wire: BusWire) throws -> Data? {
        guard secret.isEmpty else { return secret }
        return try property(path, "Item", "Label", wire) == nil ? nil : secret
    }

    /// org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value) of the Secret Service
    /// interface `interface` at `path`, positioned at the variant's signature; nil when the object
    /// does not exist.
    private func property(_ path: String, _ interface: String, _ name: String, _ wire: BusWire)
        throws -> BusReader?
    {
        let serial = try wire.call(Self.busName, path, "org.freedesktop.DBus.Properties", "Get", signature: "ss") {
            $0.string("org.freedesktop.Secret.\(interface)")
            $0.string(name)
        }
        return try answerUnlessVanished(wire.reply(to: serial), "v", wire)
    }
}
