import FoundationEssentials
import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

// Who opens a tree vault (its recipients, the identities that open its items), making one, and
// changing who opens it: its recipients (every item re-encrypted, each with a new file key) or a
// passphrase tree vault's passphrase (its identity file alone).
extension TreeVaultStore {
    /// The recipients `.recipients` lists now (signed by an allowed signer when signatures are
    /// required, or a signing write checks them: ``VaultSigning/verifiesNow``).
    /// - Throws: ``KeychainError/vaultCorrupt(path:reason:)`` when it is missing, malformed or
    ///   empty, ``KeychainError/notSigned(what:path:reason:)``.
    public func recipients() throws(KeychainError) -> [VaultRecipient] {
        let file = path(Self.recipientsFile)
        guard let bytes = try readSmallFile(file) else {
            throw .vaultCorrupt(
                path: directory,
                reason: "it has no \(Self.recipientsFile) file, so it is not a tree vault "
                    + "(make one with 'keychain-cli vault init \(directory)')")
        }
        if signing.verifiesNow { try requireSigned(recipients: bytes) }
        let recipients: [VaultRecipient]
        do {
            recipients = try VaultRecipient.parse(recipientsFile: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw .vaultCorrupt(path: file, reason: "it is not a recipients file: \(error)")
        }
        guard !recipients.isEmpty else { throw .vaultCorrupt(path: file, reason: "it lists no recipient") }
        return recipients
    }

    /// The identities that open the items: those given, else the tree's own identity, opened
    /// with the passphrase once per process.
    func identities() throws(KeychainError) -> [any AgeIdentity] {
        if let known = opened.withLock({ $0 }) { return known }
        return try asking.withLock { _ throws(KeychainError) in
            if let known = opened.withLock({ $0 }) { return known }
            let identities = try openIdentities()
            opened.withLock { $0 = identities }
            return identities
        }
    }

    private func openIdentities() throws(KeychainError) -> [any AgeIdentity] {
        givenIdentities.isEmpty ? try openIdentityFile() : givenIdentities.map(\.key)
    }

    /// The identity `.identity.age` keeps, opened with the passphrase (its scrypt runs now).
    func openIdentityFile() throws(KeychainError) -> [any AgeIdentity] {
        let file = path(Self.identityFile)
        guard let bytes = try readSmallFile(file) else {
            throw .noMatchingIdentity(
                path: directory,
                detail:
                    "it is a team vault (its items are encrypted to \(Self.recipientsFile)), and no identity was given")
        }
        let passphrase = try passphraseSource(.unlock)
        guard !passphrase.isEmpty else { throw .noPassphrase(detail: "the passphrase given is empty") }
        let plaintext: [UInt8]
        do {
            plaintext = try AgeFile.decrypt(bytes, known: nil) { passphrase }.plaintext
        } catch AgeFile.Failure.wrongPassphrase {
            throw .wrongPassphrase(path: directory)
        } catch {
            throw .vaultCorrupt(path: file, reason: "it does not open as an age identity file (\(error))")
        }
        guard
            case .success(let identities) = VaultIdentity.parse(
                identityFile: String(decoding: plaintext, as: UTF8.self))
        else { throw .vaultCorrupt(path: file, reason: "it decrypts, but not to an identity") }
        return identities.map(\.key)
    }

    /// That the identities items are opened with (given, or the passphrase's) include one of the
    /// recipients `.recipients` lists now.
    /// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` when none is, or what opening
    ///   them throws (a wrong passphrase).
    func requireOpener() throws(KeychainError) {
        guard try isRecipient(try identities()) else {
            throw .noMatchingIdentity(
                path: directory,
                detail: "none of the identities given is one of its recipients (\(Self.recipientsFile))")
        }
    }

    /// Whether one of `identities` is a recipient `.recipients` lists now.
    func isRecipient(_ identities: [any AgeIdentity]) throws(KeychainError) -> Bool {
        let listed = try recipients().map(\.key)
        return identities.contains { identity in listed.contains { identity.mayBeIdentity(of: $0) } }
    }

    // MARK: Making a tree vault, and changing who opens it

    /// Makes a tree vault in `directory` (created 0700 when missing; an existing one must hold
    /// nothing but dot files, a `.git` say): `.recipients` listing `recipients`, or, with none, a
    /// new X25519 identity kept in `.identity.age`, encrypted with `passphrase` at `workFactor`,
    /// and its recipient; a new fingerprint key (`.fingerprint.age`) encrypted to them; the
    /// vault's id (`.vault-id`), and `.recipients.sig` when `signing` signs; and a `.gitignore` of
    /// the names a killed writer's temporary file may have.
    /// - Throws: ``KeychainError/badConfiguration(detail:)`` when `directory` is a vault or holds
    ///   other files, ``KeychainError/vaultIO(detail:)`` when it cannot be written.
    public static func create(
        directory: String, recipients: [VaultRecipient], passphrase: (() throws(KeychainError) -> [UInt8])?,
        workFactor: Int, signing: VaultSigning = .none
    ) throws(KeychainError) {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw .badConfiguration(detail: "\(quotedPath(directory)) is a file, not a directory")
            }
            if access("\(directory)/\(recipientsFile)", F_OK) == 0 {
                throw .badConfiguration(detail: "\(quotedPath(directory)) is a tree vault already; nothing changed")
            }
            let names = entries(of: directory, directories: true) + entries(of: directory, directories: false)
            if let name = names.first {
                throw .badConfiguration(
                    detail: "\(quotedPath(directory)) is not empty (it holds \(quotedPath(name))): give a new or "
                        + "empty directory, which may be inside a git repository")
            }
        }
        do {
            try makeDirectories(directory)
            var listed = recipients
            if listed.isEmpty {
                guard let passphrase else {
                    throw KeychainError.badConfiguration(detail: "a tree vault needs recipients or a passphrase")
                }
                let identity = VaultIdentity()
                listed = [try VaultRecipient(identity.recipient)]
                try writeIdentity(identity, in: directory, passphrase: try passphrase(), workFactor: workFactor)
            }
            // Its own id from the start: every signature names it, so that a file signed for
            // another vault never verifies in this one.
            // A .vault-id already there (a dot file, which init allows) is replaced, never kept.
            let id = signing.expectedVaultID ?? newVaultID()
            try writeFileAtomically("\(directory)/\(vaultIDFile)", Array("\(id)\n".utf8))
            let made = TreeVaultStore(directory: directory, signing: signing) { _ throws(KeychainError) in [] }
            try made.writeRecipients(listed)
            try writeFingerprintKey(newFingerprintKey(), in: directory, to: listed)
            // The temporary file a writer killed between link and rename may leave (it holds an
            // encrypted item, and no listing reads it) stays out of git's commits.
            try writeFileAtomically("\(directory)/.gitignore", Array(".*.keychain-cli.*\n.keychain-cli.*\n".utf8))
        } catch let error as KeychainError {
            throw error
        } catch let error as FileError {
            throw .vaultIO(detail: error.description)
        } catch {
            throw .vaultIO(detail: "cannot make the tree vault \(quotedPath(directory)): \(error)")
        }
    }

    /// Re-encrypts every item to the recipients `change` makes of the current ones, each with a
    /// new file key, then writes `.recipients`: all under the vault's lock, so that no write in
    /// between encrypts to the old set. `change` runs under the lock, on `.recipients` as it is.
    /// A failure (a crash) midway leaves every item whole, some to the old set and some to the
    /// new: running the same change again finishes it. The fingerprint key is re-encrypted to the
    /// new set, or replaced by a new one when a recipient is removed.
    /// - Returns: the recipients before and after.
    @discardableResult
    public func changeRecipients(
        _ change: ([VaultRecipient]) throws(KeychainError) -> [VaultRecipient]
    ) throws(KeychainError) -> (before: [VaultRecipient], after: [VaultRecipient]) {
        try requireCheckedResigning()
        return try underLock { () throws(KeychainError) in
            let before = try recipients()
            let after = try change(before)
            guard !after.isEmpty else { throw .lastRecipient(path: directory) }
            let addresses = try addresses(service: nil)
            for (address, entry) in zip(addresses, try entries(at: addresses)) {
                guard let entry else { continue }
                try write(entry, at: address, to: after)
            }
            try rekeyFingerprint(before: before, after: after)
            try writeRecipients(after)
            // A passphrase tree vault whose own identity is no recipient any more is a team vault:
            // the identity (which opens no item now) goes, and no passphrase is asked again.
            if keepsIdentity, givenIdentities.isEmpty, let own = try identities().first?.recipientText,
                !after.contains(where: { $0.key == own })
            {
                unlink(path(Self.identityFile))
                syncDirectory(directory)
                forgetKey()
            }
            return (before, after)
        }
    }

    /// Encrypts a passphrase tree vault's identity to a new passphrase (asked of the source with
    /// ``VaultStore/PassphrasePurpose/change`` once the old one opened it); the items stay as
    /// they are. False when the vault keeps no identity (a team vault: its members' keys open it).
    public func changePassphrase() throws(KeychainError) -> Bool {
        guard keepsIdentity else { return false }
        guard let identity = try openIdentityFile().first as? AgeX25519.Identity else { return false }
        let passphrase = try passphraseSource(.change)
        guard !passphrase.isEmpty else { throw .noNewPassphrase(detail: "it is empty") }
        return try underLock { () throws(KeychainError) in
            do {
                try Self.writeIdentity(
                    VaultIdentity(key: identity), in: directory, passphrase: passphrase, workFactor: workFactor)
            } catch {
                throw .vaultIO(detail: "cannot write \(quotedPath(path(Self.identityFile))): \(error)")
            }
            return true
        }
    }

    /// The recipients of the identities this store was given.
    public var identityRecipients: [String] { givenIdentities.map(\.recipient) }

    /// Whether one of the identities this store was given may open items for `recipients` (a
    /// plugin's identity: when one of them is of its plugin); nil when it was given none.
    public func identitiesMayOpen(_ recipients: [VaultRecipient]) -> Bool? {
        givenIdentities.isEmpty ? nil : givenIdentities.contains { $0.mayOpen(recipients) }
    }

    /// Whether this vault keeps its own identity, opened by a passphrase.
    public var keepsIdentity: Bool { access(path(Self.identityFile), F_OK) == 0 }

    /// Writes `.recipients` listing `recipients`, and its signature when this store signs (the
    /// caller holds the lock, or makes the vault).
    func writeRecipients(_ recipients: [VaultRecipient]) throws(KeychainError) {
        let text = Array(recipients.map { "\($0)\n" }.joined().utf8)
        let signature = try signature(of: text, file: Self.recipientsFile)
        do {
            try writeFileAtomically(path(Self.recipientsFile), text)
            try writeSignature(signature, of: path(Self.recipientsFile))
        } catch {
            throw .vaultIO(detail: "\(error)")
        }
    }

    private static func writeIdentity(
        _ identity: VaultIdentity, in directory: String, passphrase: [UInt8], workFactor: Int
    ) throws {
        guard let line = identity.secretKeyLine else {
            throw KeychainError.badConfiguration(detail: "not an age identity")
        }
        let text = "# public key: \(identity.recipient)\n\(line)\n"
        let header = try AgeFile.makeHeader(passphrase: passphrase, workFactor: workFactor)
        try writeFileAtomically("\(directory)/\(identityFile)", try AgeFile.encrypt(Array(text.utf8), header: header))
    }
}
