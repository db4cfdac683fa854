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
            let found = try Self.searchResult(search, pairs.map { ($0.key, $0.value) }, on: bus.wire)
            guard !found.unlocked.isEmpty else {
                // Unlocking may prompt: libsecret's way. A default keyring that is locked and shows
                // no item hides the one asked for: say so rather than "not found".
                if !found.locked.isEmpty { return nil }
                if try Self.hidesItemsWhileLocked(on: bus.wire) {
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
        let get = try Self.sendGetSecret(at: path, in: session, on: wire)
        session.deriveKey()
        return try Self.secret(get, at: path, in: session, on: wire)
    }
}
