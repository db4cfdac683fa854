import FoundationEssentials
import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

/// A ``SecretStore`` in one encrypted file, for machines without a Secret Service (CI jobs,
/// servers, containers), and for teams that keep shared secrets in a repository.
///
/// The file is a standard age v1 file with one scrypt (passphrase) recipient, or, a team vault,
/// with X25519 and ssh-ed25519 recipients whose identities open it (see ``changeRecipients(_:)``):
/// `age --decrypt` opens it, and a file `age --encrypt` wrote from a ``VaultDocument`` (or from
/// `keychain-cli export`) opens as a vault.
///
/// Writes are safe against crashes and against each other: each one takes an advisory lock on the
/// vault's directory, reads the current file, and writes the new version to a temporary file that
/// is fsynced and renamed over the vault (mode 0600; a directory it creates gets 0700). Readers
/// need no lock: they see the old file or the new one. scrypt runs once per process: the header
/// (and its file key) of the first read is reused by later writes, with a fresh payload nonce.
public final class VaultStore: SecretStore {
    /// Why the passphrase is asked for: to open an existing vault, to create a new one, to
    /// change it (`vault passwd`; a prompt then asks twice), or to open it again after another
    /// process re-keyed it (``forgetRekeyedPassphrase()``: a passphrase file may hold the new one
    /// by now; a long-running reader has nobody to answer a prompt).
    public enum PassphrasePurpose: Sendable {
        case unlock, create, change, reopen
    }

    /// Gives the vault's passphrase; called at most once per store, and only when scrypt must run.
    public typealias PassphraseSource = @Sendable (PassphrasePurpose) throws(KeychainError) -> [UInt8]

    /// The work factors (log2 of scrypt's N) accepted for new vaults and when reading.
    public static let workFactors = AgeFile.workFactors
    /// The work factor of new vaults unless told otherwise: age's default, 2^18.
    public static let defaultWorkFactor = AgeFile.defaultWorkFactor
    /// The largest vault file read, in bytes.
    public static let maximumFileSize = 256 << 20

    /// The vault file.
    public let path: String
    /// The scrypt work factor given to a new vault (an existing one keeps its own).
    public let workFactor: Int
    /// How long a writer waits for another writer's lock before giving up.
    public let lockTimeout: Double

    let passphraseSource: PassphraseSource
    /// Tried on a vault encrypted to age recipients (X25519, ssh-ed25519).
    let identities: [VaultIdentity]

    struct State {
        var passphrase: [UInt8]?
        var header: AgeFile.Header?
        /// The file as last read or written, and what it holds.
        var file: [UInt8]?
        /// The stamp the file had when `file` was last read: the same stamp, no need to read
        /// it again (a long-running serve reads per request).
        var stamp: FileStamp?
        var entries: Entries = [:]
        /// The recipients the document lists (a team vault), nil for a passphrase vault.
        var recipients: [VaultRecipient]?
        /// The label `serve` gives its collection, once set.
        var collectionLabel: String?
        /// The passphrase that no longer opened the vault once another process re-keyed it: the
        /// source is asked again (``PassphrasePurpose/reopen``), and the same answer costs no scrypt.
        var stalePassphrase: [UInt8]?
    }

    package struct Entry {
        var secret: Data
        var created: Date?
        var modified: Date?
        /// What `serve` stored with the item; kept when `set` changes the secret.
        var details: ItemDetails?
    }

    package typealias Entries = [ServiceName: [KeychainKey: Entry]]
    let state = Locked(State())

    /// A store for the vault at `path`, which need not exist yet: the first write creates it.
    /// - Parameters:
    ///   - workFactor: scrypt's log2 N for a new vault, within ``workFactors``.
    ///   - lockTimeout: seconds to wait for another writer before failing with
    ///     ``KeychainError/vaultBusy(path:seconds:)``.
    ///   - passphrase: asked only when the vault must be decrypted or created.
    public init(
        path: String, workFactor: Int = VaultStore.defaultWorkFactor, lockTimeout: Double = defaultStoreTimeout,
        identities: [VaultIdentity] = [], passphrase: @escaping PassphraseSource
    ) {
        precondition(Self.workFactors.contains(workFactor), "work factor outside \(Self.workFactors)")
        self.path = path
        self.workFactor = workFactor
        self.lockTimeout = lockTimeout
        self.passphraseSource = passphrase
        self.identities = identities
    }

    /// `$XDG_DATA_HOME/keychain-cli/vault.age`, else `$HOME/.local/share/keychain-cli/vault.age`;
    /// nil when neither variable is set.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return "\(data)/keychain-cli/vault.age"
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return "\(home)/.local/share/keychain-cli/vault.age"
    }

    // MARK: SecretStore

    public func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        try read { $0[service]?[key]?.secret }
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try setSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }
    }

    /// Stores every secret with one write of the vault: all of them or, on failure, none.
    public func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        let now = Self.now()
        try modify { entries in
            for item in secrets {
                let old = entries[item.service]?[item.key]
                entries[item.service, default: [:]][item.key] = Entry(
                    secret: item.secret, created: old?.created ?? now, modified: now, details: old?.details)
            }
            return ((), !secrets.isEmpty)
        }
        progress(secrets.count)
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try modify { entries in
            guard entries[service]?.removeValue(forKey: key) != nil else { return (false, false) }
            if entries[service]?.isEmpty == true { entries[service] = nil }
            return (true, true)
        }
    }

    public func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        try read { entries in
            let services = service.map { [$0] } ?? Array(entries.keys)
            return services.flatMap { service in
                (entries[service] ?? [:]).map { key, entry in
                    ItemInfo(
                        service: service.rawValue, key: key.rawValue,
                        label: entry.details?.label ?? ItemInfo.defaultLabel(service: service, key: key),
                        application: entry.details.map { $0.attributes["application"] } ?? "keychain-cli",
                        created: entry.created, modified: entry.modified)
                }
            }
        }
    }

    public func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        try modify { entries in
            let count = entries.removeValue(forKey: service)?.count ?? 0
            return (count, count > 0)
        }
    }

    /// The time a write stamps on its items, in whole seconds as the document keeps them: what
    /// this process holds after a write is what every reader of the file gets.
    static func now() -> Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }

    // MARK: Reading and writing the file

    func read<Result: Sendable>(_ body: (Entries) -> Result) throws(KeychainError) -> Result {
        try readWithPresence(body).result
    }

    /// Runs `change` on the current contents under the directory lock, and writes the result
    /// when `change` says it changed anything.
    func modify<Result: Sendable>(_ change: (inout Entries) -> (Result, changed: Bool)) throws(KeychainError)
        -> Result
    {
        try underWriteLock(
            withoutDirectory: {
                // No directory, so no vault: a change that changes nothing creates nothing.
                var empty: Entries = [:]
                let (result, changed) = change(&empty)
                return changed ? nil : result
            },
            { state, file in
                var entries = try load(&state)
                let (result, changed) = change(&entries)
                if changed { try write(entries, to: file, state: &state) }
                return result
            })
    }

    /// Runs `body` with the state and the file to write, under the directory lock (the
    /// directory made first, unless `withoutDirectory` gives the result when there is none).
    func underWriteLock<Result: Sendable>(
        withoutDirectory: () throws(KeychainError) -> Result?, _ body: (inout State, String) throws -> Result
    ) throws(KeychainError) -> Result {
        let file = filePath
        let (directory, _) = splitPath(file)
        do {
            var info = stat()
            if stat(directory, &info) != 0 && errno == ENOENT {
                if let result = try withoutDirectory() { return result }
                try makeDirectories(directory)
            }
            // The directory's lock first, then the state's: a write waiting for another's (this
            // process's other threads take the directory's lock too) holds nothing a read needs.
            let result = try withDirectoryLock(directory, timeout: lockTimeout) { () throws in
                removeStrayTemporaries(of: file)
                return try state.withLock { state in try body(&state, file) }
            }
            guard let result else { throw KeychainError.vaultBusy(path: path, seconds: lockTimeout) }
            return result
        } catch let error as KeychainError {
            throw error
        } catch let error as FileError {
            throw KeychainError.vaultIO(detail: error.description)
        } catch {
            throw KeychainError.vaultIO(detail: "cannot write the vault \(quotedPath(path)): \(error)")
        }
    }

    /// The vault's current contents (empty when there is no file yet), decrypted only when the
    /// file differs from the one last seen.
    func load(_ state: inout State) throws(KeychainError) -> Entries {
        // Taken before the read: if the file changes in between, the next load reads it again.
        let stamp = FileStamp(filePath)
        if state.file != nil, let stamp, stamp == state.stamp { return state.entries }
        let file: [UInt8]?
        do {
            file = try readFileIfPresent(filePath, limit: Self.maximumFileSize)
        } catch {
            throw KeychainError.vaultIO(detail: error.description)
        }
        guard let file else {
            state.file = nil
            state.entries = [:]
            state.recipients = nil
            state.collectionLabel = nil
            return [:]
        }
        if file == state.file {
            state.stamp = stamp
            return state.entries
        }
        let openedBefore = state.file != nil
        let plaintext: [UInt8]
        do {
            (plaintext, state.header) = try AgeFile.decrypt(
                file, known: state.header, identities: identities.map(\.key)
            ) {
                try passphrase(state.stalePassphrase == nil ? .unlock : .reopen, state: &state)
            }
        } catch AgeFile.Failure.malformed(let reason) {
            throw KeychainError.vaultCorrupt(path: path, reason: reason)
        } catch AgeFile.Failure.wrongPassphrase where openedBefore, AgeFile.Failure.needsIdentity where openedBefore,
            AgeFile.Failure.noIdentityMatches where openedBefore, KeychainError.noPassphrase where openedBefore
        {
            // A version this store opened before, replaced by one that what opened it cannot open
            // (a passphrase vault asks for another passphrase or for an identity, a team vault no
            // longer lists this identity or asks for a passphrase): another process re-keyed the
            // vault; nothing was mistyped. (With a passphrase known, `state.passphrase` asks nothing.)
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
        (state.entries, state.recipients, state.collectionLabel) = try decode(plaintext)
        state.file = file
        state.stamp = stamp
        return state.entries
    }

    /// Encrypts and replaces the vault, with `header` or else the one read before; the caller maps
    /// the errors.
    func write(_ entries: Entries, to path: String, state: inout State, header given: AgeFile.Header? = nil) throws {
        let header: AgeFile.Header
        if let known = given ?? state.header {
            header = known  // one scrypt per process: reuse the header read or made before
        } else {
            header = try AgeFile.makeHeader(passphrase: passphrase(.create, state: &state), workFactor: workFactor)
        }
        let file = try AgeFile.encrypt(
            encode(entries, recipients: state.recipients, collectionLabel: state.collectionLabel), header: header)
        try writeFileAtomically(path, file)
        state.header = header
        state.file = file
        state.stamp = nil  // the next load reads what is there now
        state.entries = entries
    }

    /// The file to read and replace: `path`, or the file it links to, so that a symbolic link
    /// (to a mounted secret, say) stays a link and its target gets the new vault.
    /// A dangling link stays one too: the file it names is created.
    var filePath: String { followingSymbolicLinks(path) }

    /// Asks the passphrase source now (doctor), keeping the answer for later operations.
    func obtainPassphrase() throws(KeychainError) {
        _ = try state.withLock { state throws(KeychainError) in try passphrase(.unlock, state: &state) }
    }

    func passphrase(_ purpose: PassphrasePurpose, state: inout State) throws(KeychainError) -> [UInt8] {
        if let passphrase = state.passphrase { return passphrase }
        let passphrase = try passphraseSource(purpose)
        guard !passphrase.isEmpty else {
            throw KeychainError.noPassphrase(detail: "the passphrase given is empty")
        }
        if purpose == .reopen && passphrase == state.stalePassphrase { throw KeychainError.vaultRekeyed(path: path) }
        state.passphrase = passphrase
        return passphrase
    }
}
