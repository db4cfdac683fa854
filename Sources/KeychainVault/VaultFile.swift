import Crypto
import FoundationEssentials
import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

// Reading and writing the vault file. Locks, in the order they are taken:
// - the directory's flock: one writer at a time, across threads and processes;
// - `asking`: one thread asks the passphrase source;
// - `state`: held only to copy what this process knows or to store what a read or write found.
// A read copies the state, reads and decrypts the file with no lock held (scrypt, the prompt),
// and stores what it found only if nothing newer was stored meanwhile. A write opens the vault
// (and makes a new vault's header) before it waits for the flock, so that what holds the flock
// is a read of a known file, an encryption and a rename.
extension VaultStore {
    /// The vault as a read or a write left it.
    struct Contents {
        /// A digest of the file as last read or written, to tell a new file from the one known;
        /// nil when there is none. (Not the file itself: serve of a vault of 10,000 items kept
        /// its 2 MiB for as long as it ran.)
        var file: SHA256Digest?
        /// The stamp the file had when `file` was last read: the same stamp, no need to read it
        /// again (a long-running serve reads per request).
        var stamp: FileStamp?
        /// The header (and file key) of the file read, or made for the vault a write creates:
        /// one scrypt per process.
        var header: AgeFile.Header?
        var entries: Entries = [:]
        /// The recipients the document lists (a team vault), nil for a passphrase vault.
        var recipients: [VaultRecipient]?
        /// The label `serve` gives its collection, once set.
        var collectionLabel: String?
    }

    func read<Result: Sendable>(_ body: (Entries) -> Result) throws(KeychainError) -> Result {
        body(try load().entries)
    }

    /// Runs `change` on the current contents under the directory lock, and writes the result
    /// when `change` says it changed anything. `creating`: whether the change may create a
    /// missing vault (a delete changes nothing there, and asks for no passphrase).
    func modify<Result: Sendable>(creating: Bool = true, _ change: (inout Entries) -> (Result, changed: Bool))
        throws(KeychainError) -> Result
    {
        try underWriteLock(
            creating: creating,
            withoutDirectory: {
                // No directory, so no vault: a change that changes nothing creates nothing.
                var empty: Entries = [:]
                let (result, changed) = change(&empty)
                return changed ? nil : result
            },
            { file in
                var contents = try load()
                let (result, changed) = change(&contents.entries)
                if changed { try write(contents, to: file) }
                return result
            })
    }

    /// Runs `body` with the file to write, under the directory lock (the directory made first,
    /// unless `withoutDirectory` gives the result when there is none). The vault is opened first,
    /// and, when `creating`, a missing vault's header made, with no lock held. The vault's path
    /// is followed again once the lock is held: a path made a link meanwhile (the vault moved and
    /// linked back) gets its target written, not the link replaced; one that now leads to another
    /// directory is locked there (three tries).
    func underWriteLock<Result: Sendable>(
        creating: Bool = true, withoutDirectory: () throws(KeychainError) -> Result?,
        _ body: (String) throws -> Result
    ) throws(KeychainError) -> Result {
        do {
            for _ in 0..<3 {
                let (directory, _) = splitPath(filePath)
                var info = stat()
                if stat(directory, &info) != 0 && errno == ENOENT {
                    if let result = try withoutDirectory() { return result }
                    try makeDirectories(directory)
                }
                try openBeforeWriting(creating: creating)
                try requireSigner()
                let result = try withDirectoryLock(directory, timeout: lockTimeout) { () throws -> Result? in
                    let file = filePath
                    guard splitPath(file).directory == directory else { return nil }
                    try writeCheck?()
                    removeStrayTemporaries(of: file)
                    return try VaultSigning.$underLock.withValue(true) { try body(file) }
                }
                guard let result else { throw KeychainError.vaultBusy(path: path, seconds: lockTimeout) }
                if let result { return result }
            }
            throw KeychainError.vaultIO(detail: "the vault \(quotedPath(path)) kept moving to other directories")
        } catch let error as KeychainError {
            throw error
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch let error as FileError {
            throw KeychainError.vaultIO(detail: error.description)
        } catch {
            throw KeychainError.vaultIO(detail: "cannot write the vault \(quotedPath(path)): \(error)")
        }
    }

    /// Opens the vault; when there is none and `creating`, asks the passphrase of the one a write
    /// will create and makes its header (a team vault's header is made by the write).
    func openBeforeWriting(creating: Bool) throws(KeychainError) {
        let contents = try load()
        guard creating, contents.file == nil, contents.header == nil, contents.recipients == nil else { return }
        let header = try header(passphrase: passphrase(.create))
        state.withLock { state in
            if state.contents.file == nil && state.contents.header == nil { state.contents.header = header }
        }
    }

    /// The vault's current contents (empty when there is no file yet), decrypted only when the
    /// file differs from the one last seen. No lock is held while the file is read and decrypted.
    func load() throws(KeychainError) -> Contents {
        // Taken before the read: if the file changes in between, the next load reads it again.
        let stamp = FileStamp(filePath)
        let (known, reopening, holdsKey) = state.withLock { ($0.contents, $0.stalePassphrase != nil, $0.holdsKey) }
        if known.file != nil, let stamp, stamp == known.stamp { return known }
        var file: [UInt8]?
        do {
            file = try readFileIfPresent(filePath, limit: Self.maximumFileSize, regular: true)
        } catch {
            throw KeychainError.vaultIO(detail: error.description)
        }
        if signing.verifiesNow, let read = file { file = try verified(read) }
        var loaded = known
        (loaded.file, loaded.stamp) = (file.map { SHA256.hash(data: $0) }, stamp)
        if file == nil {
            (loaded.entries, loaded.recipients, loaded.collectionLabel) = ([:], nil, nil)
            if known.file != nil && !holdsKey { loaded.header = nil }  // removed since it was read
        } else if loaded.file != known.file, let file {
            let plaintext: [UInt8]
            (plaintext, loaded.header) = try decrypt(file, known: known, reopening: reopening)
            (loaded.entries, loaded.recipients, loaded.collectionLabel) = try decode(plaintext)
        }
        state.withLock { state in
            // Unless another thread stored a newer file meanwhile. A missing file keeps the header
            // made for the vault a write will create, not that of a vault removed since it was
            // read (a new vault is a passphrase vault, with a header of its own).
            guard state.contents.file == known.file, state.contents.stamp == known.stamp else { return }
            let header = loaded.file == nil && known.file == nil ? state.contents.header : loaded.header
            state.contents = loaded
            state.contents.header = header
        }
        return loaded
    }

    private func decrypt(_ file: [UInt8], known: Contents, reopening: Bool) throws(KeychainError) -> (
        [UInt8], AgeFile.Header
    ) {
        let openedBefore = known.file != nil
        do {
            return try AgeFile.decrypt(file, known: known.header, identities: identities.map(\.key)) {
                try passphrase(reopening ? .reopen : .unlock)
            }
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch AgeFile.Failure.malformed(let reason) {
            throw KeychainError.vaultCorrupt(path: path, reason: reason)
        } catch AgeFile.Failure.wrongPassphrase where openedBefore, AgeFile.Failure.needsIdentity where openedBefore,
            AgeFile.Failure.noIdentityMatches where openedBefore, KeychainError.noPassphrase where openedBefore
        {
            // A version this store opened before, replaced by one that what opened it cannot open
            // (a passphrase vault asks for another passphrase or for an identity, a team vault no
            // longer lists this identity or asks for a passphrase): another process re-keyed the
            // vault; nothing was mistyped. (With a passphrase known, `passphrase` asks nothing.)
            throw KeychainError.vaultRekeyed(path: path)
        } catch AgeFile.Failure.wrongPassphrase {
            throw KeychainError.wrongPassphrase(path: path)
        } catch AgeFile.Failure.needsIdentity(let types) {
            throw KeychainError.noMatchingIdentity(
                path: path,
                detail: "it is encrypted to age recipients (\(types.joined(separator: ", "))), not to a passphrase")
        } catch AgeFile.Failure.noIdentityMatches {
            throw KeychainError.noMatchingIdentity(
                path: path, detail: "none of the identities given is one of its recipients")
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError.vaultCorrupt(path: path, reason: "\(error)")
        }
    }

    /// Encrypts `contents` with its header (or a new passphrase vault's), replaces the vault, and
    /// stores what was written: the caller holds the directory lock, so it is the newest. The
    /// caller maps the errors.
    func write(_ contents: Contents, to path: String) throws {
        var written = contents
        let header = try contents.header ?? AgeFile.makeHeader(passphrase: passphrase(.create), workFactor: workFactor)
        let file = try AgeFile.encrypt(
            encode(contents.entries, recipients: contents.recipients, collectionLabel: contents.collectionLabel),
            header: header)
        let signature = try signature(of: file)
        try writeFileChecked(path, file, check: writeCheck)
        try writeSignature(signature)
        // No stamp: the next load reads what is there.
        (written.header, written.file, written.stamp) = (header, SHA256.hash(data: file), nil)
        state.withLock { $0.contents = written }
    }

    /// A header for `passphrase` at this store's work factor (its scrypt runs now).
    func header(passphrase: [UInt8]) throws(KeychainError) -> AgeFile.Header {
        do {
            return try AgeFile.makeHeader(passphrase: passphrase, workFactor: workFactor)
        } catch {
            throw KeychainError.vaultIO(detail: "cannot make the vault's header: \(error)")
        }
    }

    /// The file to read and replace: `path`, or the file it links to, so that a symbolic link
    /// (to a mounted secret, say) stays a link and its target gets the new vault.
    /// A dangling link stays one too: the file it names is created.
    var filePath: String { followingSymbolicLinks(path) }

    /// Asks the passphrase source now (doctor), keeping the answer for later operations.
    func obtainPassphrase() throws(KeychainError) {
        _ = try passphrase(.unlock)
    }

    /// The passphrase known, or the source's answer, asked by one thread at a time: another that
    /// needs it meanwhile gets the same answer, one that does not waits for nothing.
    func passphrase(_ purpose: PassphrasePurpose) throws(KeychainError) -> [UInt8] {
        if let known = state.withLock({ $0.passphrase }) { return known }
        return try asking.withLock { _ throws(KeychainError) in
            let (known, stale) = state.withLock { ($0.passphrase, $0.stalePassphrase) }
            if let known { return known }
            let passphrase = try passphraseSource(purpose)
            guard !passphrase.isEmpty else {
                throw KeychainError.noPassphrase(detail: "the passphrase given is empty")
            }
            if purpose == .reopen && passphrase == stale { throw KeychainError.vaultRekeyed(path: path) }
            state.withLock { $0.passphrase = passphrase }
            return passphrase
        }
    }
}

/// Writes `bytes` to `path` atomically (``writeFileAtomically(_:_:replacing:beforeReplacing:)``),
/// asking `check` last, once the new file is written and synced, just before it replaces `path`:
/// the holder's check (its client's deadline, the vault still unlocked), as late as it can be.
/// - Throws: what `check` throws (`path` untouched), or ``FileError``.
func writeFileChecked(
    _ path: String, _ bytes: [UInt8], sweeping: Bool = true, check: (@Sendable () throws(KeychainError) -> Void)?
) throws {
    var stopped: KeychainError?
    do {
        try writeFileAtomically(path, bytes, sweeping: sweeping) {
            do throws(KeychainError) {
                try check?()
                return true
            } catch {
                stopped = error
                return false
            }
        }
    } catch {
        if let stopped { throw stopped }
        throw error
    }
}
