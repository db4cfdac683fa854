import FoundationEssentials
import Glibc
import KeychainAge
import KeychainFormats
import KeychainStore
import KeychainSystem

/// A ``SecretStore`` in a directory, one standard age file per secret: a team vault that lives in
/// git (`vault init DIR`; docs/backends/vault.md, "Tree vaults").
///
/// ```
/// DIR/.recipients            who may read: age -R syntax, one recipient per line, in plaintext
/// DIR/.identity.age          a passphrase tree vault only: its X25519 identity, age -p encrypted
/// DIR/SERVICE/KEY.age        one item (``VaultItemDocument``), encrypted to every recipient
/// ```
/// Names are escaped by ``TreeVaultNames``. A write changes one file: under a lock on the
/// directory (`flock`), it reads what is on disk now (the item, the recipients) and replaces the
/// item's file atomically (mode 0600, fsynced); readers take no lock. Every item is encrypted to
/// the recipients `.recipients` lists when it is written, with a file key of its own.
public final class TreeVaultStore: SecretStore, @unchecked Sendable {
    /// The vault's directory.
    public let directory: String
    /// How long a writer waits for another writer's lock before giving up.
    public let lockTimeout: Double
    /// Whether listings decrypt every item for its label and dates (`list --long`, `--json`) or
    /// read the names from the tree alone.
    public let listing: ListingDetail
    /// The scrypt work factor of the identity a passphrase tree vault keeps (`vault passwd`).
    public let workFactor: Int

    /// Runs git in the vault's directory, for `history` and `rollback`; nil: not asked.
    let git: GitRunner?
    let givenIdentities: [VaultIdentity]
    let passphraseSource: VaultStore.PassphraseSource
    /// The identities that open items, once known: those given, else the tree's own identity
    /// opened with the passphrase (one scrypt per process); shared by the stores ``waiting(_:check:)`` makes.
    let opened: Locked<[any AgeIdentity]?>
    /// Checked under the vault's lock before a write begins and again before it replaces a file
    /// (the holder: its client's deadline, and that the vault is still unlocked).
    let writeCheck: (@Sendable () throws(KeychainError) -> Void)?
    /// Held by the one thread asking the passphrase source.
    let asking = Locked(())
    /// Who signs this store's writes and whose signatures its reads require.
    public let signing: VaultSigning
    /// Whether `.recipients` was found signed by an allowed signer, for reads (a write checks
    /// the file it encrypts to, under the lock); shared by the stores ``waiting(_:check:)`` makes.
    let recipientsVerified: Locked<Bool>
    /// The vault's id as reads first found it (``knownVaultID()``).
    let readVaultID = Locked<String?>(nil)

    /// The recipients file, relative to the directory.
    public static let recipientsFile = ".recipients"
    /// A passphrase tree vault's identity, relative to the directory.
    public static let identityFile = ".identity.age"
    /// The largest item file read, in bytes: the largest secret, escaped, with its details.
    static let maximumItemFile = 8 << 20

    public init(
        directory: String, workFactor: Int = VaultStore.defaultWorkFactor, lockTimeout: Double = defaultStoreTimeout,
        listing: ListingDetail = .full, identities: [VaultIdentity] = [], git: GitRunner? = nil,
        signing: VaultSigning = .none, passphrase: @escaping VaultStore.PassphraseSource
    ) {
        self.git = git
        (self.signing, recipientsVerified) = (signing, Locked(false))
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        (self.workFactor, self.lockTimeout, self.listing) = (workFactor, lockTimeout, listing)
        (givenIdentities, passphraseSource) = (identities, passphrase)
        (opened, writeCheck) = (Locked(nil), nil)
    }

    /// This store (the same identities) reading history with `git` (`history`, `rollback`).
    public func reading(git: @escaping GitRunner) -> TreeVaultStore {
        TreeVaultStore(sharing: self, lockTimeout: lockTimeout, writeCheck: writeCheck, git: git)
    }

    /// A store that shares `other`'s identities, with its own lock timeout and write check (and
    /// `git`, or `other`'s).
    init(
        sharing other: TreeVaultStore, lockTimeout: Double, writeCheck: (@Sendable () throws(KeychainError) -> Void)?,
        git: GitRunner? = nil
    ) {
        (directory, self.lockTimeout, listing, workFactor) = (
            other.directory, lockTimeout, other.listing, other.workFactor
        )
        (self.git, givenIdentities, passphraseSource, opened) = (
            git ?? other.git, other.givenIdentities, other.passphraseSource, other.opened
        )
        (self.writeCheck, signing, recipientsVerified) = (writeCheck, other.signing, other.recipientsVerified)
    }

    /// Whether `path` names a directory (a tree vault, or one to be made).
    public static func isTree(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    // MARK: Paths

    func path(_ relative: String) -> String { "\(directory)/\(relative)" }

    /// The item's file. Its service's directory and the file itself, where they exist, must not
    /// be symbolic links: a link (which git keeps, and a pull request may bring) could lead a
    /// read to another vault's item or a write or delete out of the vault.
    /// - Throws: ``KeychainError/itemCorrupt(path:reason:)`` for a link.
    func itemPath(_ address: SecretAddress) throws(KeychainError) -> String {
        let service = path(try TreeVaultNames.directory(of: address.service))
        let file = "\(service)/\(try TreeVaultNames.fileName(of: address.key))"
        for link in [service, file] {
            var info = stat()
            if lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK {
                throw .itemCorrupt(
                    path: link,
                    reason: "it is a symbolic link, and a tree vault's services and items are its own directories "
                        + "and files (a link could lead a read or a write out of the vault)")
            }
        }
        return file
    }

    /// One of the vault's own small files (at most `limit` bytes); nil when there is none.
    func readSmallFile(_ file: String, limit: Int = 1 << 20) throws(KeychainError) -> [UInt8]? {
        do {
            return try readFileIfPresent(file, limit: limit, regular: true)
        } catch {
            throw .vaultIO(detail: error.description)
        }
    }

    // MARK: Items

    /// The item at `address` as its file holds it now; nil when there is none.
    /// With signatures required (``VaultSigning/verifiesNow``), the item is decrypted only once
    /// its signature verifies.
    func entry(at address: SecretAddress) throws(KeychainError) -> VaultStore.Entry? {
        let file = try itemPath(address)
        guard let bytes = try readItem(file) else { return nil }
        guard signing.verifiesNow else { return try decrypt(bytes, at: address, file: file) }
        try requireSignedRecipients()
        guard let verified = try verified(bytes, at: address, file: file) else { return nil }
        return try decrypt(verified, at: address, file: file)
    }

    /// The bytes of the item's file at `file`; nil when there is none.
    func readItem(_ file: String) throws(KeychainError) -> [UInt8]? {
        do {
            return try readFileIfPresent(file, limit: Self.maximumItemFile, regular: true)
        } catch  where error.code == EFBIG {
            throw .itemCorrupt(
                path: file, reason: "it is larger than \(Self.maximumItemFile >> 20) MiB, more than any item holds")
        } catch {
            throw .vaultIO(detail: error.description)
        }
    }

    /// The item `bytes` (the file at `file`) holds, which must name `address`.
    func decrypt(_ bytes: [UInt8], at address: SecretAddress, file: String) throws(KeychainError) -> VaultStore.Entry {
        let item = try open(bytes, at: address, file: file)
        guard let secret = item.bytes else { throw .itemCorrupt(path: file, reason: "its secret is malformed") }
        return VaultStore.Entry(secret: secret, created: item.created, modified: item.modified, details: item.details)
    }

    /// The plaintext of the age file `bytes` (named `file` in messages), encrypted to the vault's
    /// recipients, opened with its identities.
    /// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` when none opens it,
    ///   ``KeychainError/itemCorrupt(path:reason:)`` when it is encrypted to a passphrase or damaged.
    func decryptToIdentities(_ bytes: [UInt8], file: String) throws(KeychainError) -> [UInt8] {
        do {
            return try AgeFile.decrypt(bytes, known: nil, identities: try identities()) {
                throw AgeFile.Failure.needsIdentity(["scrypt"])
            }.plaintext
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch AgeFile.Failure.noIdentityMatches {
            throw .noMatchingIdentity(path: file, detail: "none of the identities given is one of its recipients")
        } catch AgeFile.Failure.needsIdentity {
            throw .itemCorrupt(path: file, reason: "it is encrypted to a passphrase, not to the vault's recipients")
        } catch AgeFile.Failure.malformed(let reason) {
            throw .itemCorrupt(path: file, reason: reason)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw .itemCorrupt(path: file, reason: "\(error)")
        }
    }

    /// The item document `bytes` (the file at `file`) holds, decrypted in memory with the vault's
    /// identities; it must name `address` when one is given.
    /// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` when no identity opens it,
    ///   ``KeychainError/itemCorrupt(path:reason:)`` when it is not a vault item (of `address`).
    public func open(_ bytes: [UInt8], at address: SecretAddress?, file: String) throws(KeychainError)
        -> VaultDocument.Item
    {
        var plaintext = try decryptToIdentities(bytes, file: file)
        defer { wipe(&plaintext) }
        let item: VaultDocument.Item
        do {
            item = try VaultItemDocument.decode(plaintext).item
        } catch {
            // The decoder's words only: never the plaintext.
            throw .itemCorrupt(path: file, reason: "it decrypts, but not to a keychain-cli vault item (\(error))")
        }
        // Byte for byte: Swift's == holds "é" and "e\u{301}" equal, and they are two files.
        if let address,
            !item.service.utf8.elementsEqual(address.service.rawValue.utf8)
                || !item.key.utf8.elementsEqual(address.key.rawValue.utf8)
        {
            throw .itemCorrupt(
                path: file,
                reason: "it holds the item \(escapedForDisplay(item.service))/\(escapedForDisplay(item.key)), "
                    + "not the one its path names (was it moved or copied?)")
        }
        return item
    }

    /// `item` encrypted to `recipients` with a new file key: an item file's bytes.
    public static func seal(_ item: VaultDocument.Item, to recipients: [VaultRecipient]) throws(KeychainError)
        -> [UInt8]
    {
        do {
            var plaintext = try VaultItemDocument(item).encoded()
            defer { wipe(&plaintext) }
            return try AgeFile.encrypt(
                plaintext, header: try AgeFile.makeHeader(recipients: recipients.map(\.recipient)))
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch {
            throw .vaultIO(
                detail:
                    "cannot encrypt the item \(escapedForDisplay(item.service))/\(escapedForDisplay(item.key)): \(error)"
            )
        }
    }

    /// Encrypts `entry` to `recipients` and replaces the item's file with it (the caller holds
    /// the lock); the service's directory is made (0700) when missing.
    func write(_ entry: VaultStore.Entry, at address: SecretAddress, to recipients: [VaultRecipient])
        throws(KeychainError)
    {
        let file = try itemPath(address)
        var item = VaultDocument.Item(
            service: address.service.rawValue, key: address.key.rawValue, secret: entry.secret,
            created: entry.created, modified: entry.modified)
        item.details = entry.details
        let bytes = try Self.seal(item, to: recipients)
        let signature = try signature(of: bytes, file: try Self.relativePath(address))
        if signature != nil { try requireSignaturePlaces(for: [file]) }
        do {
            try makeDirectories(splitPath(file).directory)
            // No sweep of stray temporary files: it reads the whole service directory (100,000
            // names), and a kill leaves one only in the microseconds between link and rename.
            try writeFileChecked(file, bytes, sweeping: false, check: writeCheck)
            try writeSignature(signature, of: file)
        } catch let error as KeychainError {
            throw error
        } catch let error as FileError {
            throw .vaultIO(detail: error.description)
        } catch {
            throw .vaultIO(detail: "cannot write \(quotedPath(file)): \(error)")
        }
    }

    /// Removes the item's file, and its service's directory once empty (git keeps no empty
    /// directory, so a clone has none either). False when there was no file.
    func remove(_ address: SecretAddress) throws(KeychainError) -> Bool {
        let file = try itemPath(address)
        guard unlink(file) == 0 else {
            if errno == ENOENT { return false }
            throw .vaultIO(detail: "cannot remove \(quotedPath(file)): \(String(cString: strerror(errno)))")
        }
        try? writeSignature(nil, of: file)
        // The unlink is durable once the service's directory is synced; its removal, once the
        // vault's is.
        let service = splitPath(file).directory
        if rmdir(service) != 0 { syncDirectory(service) }
        syncDirectory(directory)
        return true
    }

    /// Runs `body` under the vault's lock (a `flock` on its directory).
    /// A writer must open the vault first (`authenticated`): its identities, or the passphrase's,
    /// must be one of the recipients, as a single-file vault's writer must open it; anyone can
    /// encrypt to public keys, and a wrong passphrase must not write. (git-setup's fingerprint key
    /// needs the recipients alone.)
    func underLock<Result>(authenticated: Bool = true, _ body: () throws(KeychainError) -> Result)
        throws(KeychainError) -> Result
    {
        guard Self.isTree(directory) else {
            throw .vaultCorrupt(
                path: directory, reason: "it is not a directory (make a tree vault with 'keychain-cli vault init')")
        }
        if authenticated {
            try requireOpener()
            try requireSigner()
        }
        let result: Result?
        do {
            result = try withDirectoryLock(directory, timeout: lockTimeout) { () throws(KeychainError) -> Result in
                try writeCheck?()
                return try VaultSigning.holdingLock(body)
            }
        } catch let error as KeychainError {
            throw error
        } catch {
            throw .vaultIO(detail: "\(error)")
        }
        guard let result else { throw .vaultBusy(path: directory, seconds: lockTimeout) }
        return result
    }
}
