import KeychainAge
import KeychainStore
import KeychainSystem

// What `unlock` takes from a passphrase tree vault, and the store its holder opens it with: the
// vault's X25519 identity, never the passphrase; or a team tree vault's identity (never an ssh
// key's seed or passphrase).
extension TreeVaultStore {
    /// The identity to hold, given to `body` (which must not keep its bytes) with its type: the
    /// 32 bytes of the X25519 identity `.identity.age` keeps, opened with the passphrase; for a
    /// team tree vault, the first identity given that is one of its recipients (an X25519 key, or
    /// an ssh-ed25519 key's X25519 private key and Ed25519 public key, a passphrase-protected
    /// key decrypted now). Nil for a team tree vault given no identity it lists.
    package func withHeldIdentity<Result>(_ body: (_ type: String, UnsafeRawBufferPointer) throws -> Result) throws
        -> Result?
    {
        if keepsIdentity {
            guard let identity = try openIdentityFile().first as? AgeX25519.Identity else { return nil }
            return try identity.withRawKey { try body(identity.stanzaType, $0) }
        }
        let listed = Set(try recipients().map(\.key))
        for given in givenIdentities.map(\.key) where listed.contains(given.recipientText) {
            let identity = try (given as? AgeDeferredIdentity)?.identity() ?? given
            if let x25519 = identity as? AgeX25519.Identity {
                return try x25519.withRawKey { try body(x25519.stanzaType, $0) }
            }
            if let ssh = identity as? AgeSSHEd25519.Identity {
                return try ssh.withRawKey { try body(ssh.stanzaType, $0) }
            }
            throw KeychainError.badConfiguration(
                detail: "the holder keeps a tree vault's X25519 or ssh-ed25519 identity, and the one given that opens "
                    + "\(quotedPath(directory)) is \(identity.stanzaType): give it to each command instead")
        }
        return nil
    }

    /// A store that opens the tree vault at `directory` with the identity `rawKey` (of `type`,
    /// as ``withHeldIdentity(_:)`` gives it) alone: it never asks for a passphrase, so once the
    /// identity is forgotten (``forgetKey()``) every operation is
    /// ``KeychainError/vaultRekeyed(path:)``. Nil when `rawKey` is no such key.
    package static func holding(
        directory: String, rawKey: UnsafeRawBufferPointer, type: String = "X25519", lockTimeout: Double
    ) -> TreeVaultStore? {
        var identity: (any AgeIdentity)?
        if type == "X25519" {
            identity = AgeX25519.Identity(rawKey: rawKey)
        } else if type == "ssh-ed25519" {
            identity = AgeSSHEd25519.Identity(rawKey: rawKey)
        }
        guard let identity else { return nil }
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
