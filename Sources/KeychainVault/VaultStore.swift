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
    /// Who signs this store's writes and whose signatures its reads require: the file is signed
    /// whole (`PATH.sig`).
    public let signing: VaultSigning

    /// What this process knows of the vault, behind `state`'s lock, held only to copy it or to
    /// store what a read or write found: never across the file lock's wait, scrypt or a prompt.
    struct State {
        var contents = Contents()
        var passphrase: [UInt8]?
        /// The passphrase that no longer opened the vault once another process re-keyed it: the
        /// source is asked again (``PassphrasePurpose/reopen``), and the same answer costs no scrypt.
        var stalePassphrase: [UInt8]?
        /// Opened with a file key given to it (``holding(path:header:lockTimeout:)``): the key
        /// is kept while the file is briefly missing (a `git checkout` of a branch without it).
        var holdsKey = false
    }

    package struct Entry {
        var secret: Data
        var created: Date?
        var modified: Date?
        /// What `serve` stored with the item; kept when `set` changes the secret.
        var details: ItemDetails?
    }

    package typealias Entries = [ServiceName: [KeychainKey: Entry]]
    let state: Locked<State>
    /// Checked under the vault's lock before a write begins and again before it replaces the
    /// file (the holder: its client's deadline, and that the vault is still unlocked).
    let writeCheck: (@Sendable () throws(KeychainError) -> Void)?
    /// Held by the one thread asking the passphrase source, so that it is asked once; taken
    /// before `state`'s lock, never while holding it.
    let asking = Locked(())

    /// A store for the vault at `path`, which need not exist yet: the first write creates it.
    /// - Parameters:
    ///   - workFactor: scrypt's log2 N for a new vault, within ``workFactors``.
    ///   - lockTimeout: seconds to wait for another writer before failing with
    ///     ``KeychainError/vaultBusy(path:seconds:)``.
    ///   - passphrase: asked only when the vault must be decrypted or created.
    public init(
        path: String, workFactor: Int = VaultStore.defaultWorkFactor, lockTimeout: Double = defaultStoreTimeout,
        identities: [VaultIdentity] = [], signing: VaultSigning = .none, passphrase: @escaping PassphraseSource
    ) {
        precondition(Self.workFactors.contains(workFactor), "work factor outside \(Self.workFactors)")
        self.signing = signing
        self.path = path
        self.workFactor = workFactor
        self.lockTimeout = lockTimeout
        self.passphraseSource = passphrase
        self.identities = identities
        (state, writeCheck) = (Locked(State()), nil)
    }

    /// A store that shares `other`'s state (what it knows of the vault, its key), with its own
    /// lock timeout and write check.
    init(sharing other: VaultStore, lockTimeout: Double, writeCheck: (@Sendable () throws(KeychainError) -> Void)?) {
        (path, workFactor, self.lockTimeout) = (other.path, other.workFactor, lockTimeout)
        (passphraseSource, identities, signing) = (other.passphraseSource, other.identities, other.signing)
        (state, self.writeCheck) = (other.state, writeCheck)
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

    /// Every write is of the whole file.
    public var writesManyAtOnce: Bool { true }

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

    /// Decided under the write lock, on the file as it is then, and written once: all or none.
    public func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        let now = Self.now()
        let added = try modify { entries in
            let added = secrets.map { item in
                guard entries[item.service]?[item.key] == nil else { return false }
                entries[item.service, default: [:]][item.key] = Entry(
                    secret: item.secret, created: now, modified: now, details: nil)
                return true
            }
            return (added, added.contains(true))
        }
        progress(secrets.count)
        return added
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try modify(creating: false) { entries in
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
        try modify(creating: false) { entries in
            let count = entries.removeValue(forKey: service)?.count ?? 0
            return (count, count > 0)
        }
    }

    /// The time a write stamps on its items, in whole seconds as the document keeps them: what
    /// this process holds after a write is what every reader of the file gets.
    static func now() -> Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }
}
