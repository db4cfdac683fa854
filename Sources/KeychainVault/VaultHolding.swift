import KeychainAge
import KeychainStore
import KeychainSystem

// What `unlock` takes from a vault it opens, and the store its holder opens the vault with: the
// file key, never the passphrase.
extension VaultStore {
    /// The header of the vault file as it is now, with its file key, opened as any read opens it
    /// (asking the passphrase source, or trying the identities); nil when there is no file yet.
    package func openedHeader() throws(KeychainError) -> AgeFile.Header? {
        let contents = try load()
        return contents.file == nil ? nil : contents.header
    }

    /// A store that opens the vault at `path` with `header`'s file key alone: it never asks for
    /// a passphrase nor tries an identity, so a vault re-keyed since (a new header) is
    /// ``KeychainError/vaultRekeyed(path:)``, on reads and writes alike. Its writes are those of
    /// any store: under the directory's lock, on the file as it is then, replaced atomically.
    package static func holding(path: String, header: AgeFile.Header, lockTimeout: Double) -> VaultStore {
        let store = VaultStore(path: path, lockTimeout: lockTimeout) { _ throws(KeychainError) in
            throw .vaultRekeyed(path: path)
        }
        store.state.withLock { ($0.contents.header, $0.holdsKey) = (header, true) }
        return store
    }

    /// This store (the same state: what it knows of the vault, its key) for a write that waits
    /// up to `lockTimeout` for the vault's lock, and that `check` may stop under the lock before
    /// it begins and before it replaces the file: the holder writes within its client's
    /// --timeout, and not at all once the vault is locked.
    package func waiting(_ lockTimeout: Double, check: @escaping @Sendable () throws(KeychainError) -> Void)
        -> VaultStore
    {
        VaultStore(sharing: self, lockTimeout: lockTimeout, writeCheck: check)
    }

    /// Drops the file key and every decrypted secret this store (and every store sharing its
    /// state) keeps: the key's memory is cleared once the last operation using it ends, and every
    /// later operation fails as on a vault re-keyed since.
    package func forgetKey() {
        state.withLock { state in
            state.contents = Contents()
            (state.passphrase, state.stalePassphrase) = (nil, nil)
        }
    }

    /// Whether this store still opens the vault with what it was given: the file read again if it
    /// changed. False when the vault was re-keyed or removed since.
    package func opensWithHeldKey() throws(KeychainError) -> Bool {
        do {
            return try load().file != nil
        } catch .vaultRekeyed, .noMatchingIdentity, .noPassphrase, .wrongPassphrase {
            return false
        }
    }
}
