import KeychainAge
import KeychainStore
import KeychainSystem

// What `unlock` takes from a passphrase tree vault, and the store its holder opens it with: the
// vault's X25519 identity, never the passphrase.
extension TreeVaultStore {
    /// The 32 bytes of the identity `.identity.age` keeps, opened with the passphrase, given to
    /// `body` (which must not keep them); nil for a team tree vault, which keeps no identity.
    package func withHeldIdentity<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result? {
        guard keepsIdentity, let identity = try openIdentityFile().first as? AgeX25519.Identity else { return nil }
        return try identity.withRawKey(body)
    }

    /// A store that opens the tree vault at `directory` with the identity `rawKey` is alone: it
    /// never asks for a passphrase, so once the identity is forgotten (``forgetKey()``) every
    /// operation is ``KeychainError/vaultRekeyed(path:)``. Nil when `rawKey` is no X25519 key.
    package static func holding(directory: String, rawKey: UnsafeRawBufferPointer, lockTimeout: Double)
        -> TreeVaultStore?
    {
        guard let identity = AgeX25519.Identity(rawKey: rawKey) else { return nil }
        let store = TreeVaultStore(directory: directory, lockTimeout: lockTimeout) { _ throws(KeychainError) in
            throw .vaultRekeyed(path: directory)
        }
        store.opened.withLock { $0 = [identity] }
        return store
    }

    /// This store (the same identity) for a write that waits up to `lockTimeout` for the vault's
    /// lock, and that `check` may stop under the lock and before it replaces a file.
    package func waiting(_ lockTimeout: Double, check: @escaping @Sendable () throws(KeychainError) -> Void)
        -> TreeVaultStore
    {
        TreeVaultStore(sharing: self, lockTimeout: lockTimeout, writeCheck: check)
    }

    /// Drops the identity this store (and every store sharing it) holds.
    package func forgetKey() {
        opened.withLock { $0 = nil }
    }

    /// Whether the identity held is still one of the vault's recipients (a `vault recipients
    /// remove` of it, or a vault removed, ends its holding).
    package func opensWithHeldKey() throws(KeychainError) -> Bool {
        guard let held = opened.withLock({ $0 }), Self.isTree(directory) else { return false }
        return try isRecipient(held)
    }
}
