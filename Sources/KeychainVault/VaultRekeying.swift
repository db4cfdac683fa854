import KeychainAge
import KeychainStore
import KeychainSystem

/// What a vault file is encrypted to (``VaultStore/lock()``).
public enum VaultLock: Sendable, Equatable {
    /// There is no vault file yet.
    case noVault
    /// One passphrase (an age scrypt stanza).
    case passphrase
    /// Age recipients: those the vault's document lists (nil when it lists none: encrypted by
    /// another tool, `age -r` say), and the recipient stanzas' types in its header.
    case recipients([VaultRecipient]?, stanzaTypes: [String])
}

// Re-keying: a new file key for a new set of recipients, or for a new passphrase.
extension VaultStore {
    /// The recipients of the identities this store was given.
    public var identityRecipients: [String] { identities.map(\.recipient) }

    /// Whether one of the identities this store was given may open a vault for `recipients` (a
    /// plugin's identity: when one of them is of its plugin); nil when it was given none.
    public func identitiesMayOpen(_ recipients: [VaultRecipient]) -> Bool? {
        identities.isEmpty ? nil : identities.contains { $0.mayOpen(recipients) }
    }

    /// What the vault is encrypted to; opening it takes an identity or the passphrase.
    public func lock() throws(KeychainError) -> VaultLock {
        let contents = try load()
        guard contents.file != nil, let header = contents.header else { return .noVault }
        return header.stanzaTypes == ["scrypt"]
            ? .passphrase : .recipients(contents.recipients, stanzaTypes: header.stanzaTypes)
    }

    /// Re-encrypts the vault to the recipients `change` makes of the current ones, with a new
    /// file key, so that a recipient removed cannot open this version or later ones. A missing
    /// vault is created (empty); a passphrase vault becomes a team vault (its current recipient
    /// list is then empty).
    /// `change` runs under the vault's write lock, on the recipients of the version it replaces:
    /// a check it makes (that a recipient to remove is one, say) holds for the write, and what it
    /// throws leaves the vault as it was.
    /// - Returns: the recipients before and after.
    /// - Throws: ``KeychainError/badConfiguration(detail:)`` when no recipient would be left, or
    ///   what `change` throws.
    @discardableResult
    public func changeRecipients(
        _ change: ([VaultRecipient]) throws(KeychainError) -> [VaultRecipient]
    ) throws(KeychainError) -> (
        before: [VaultRecipient], after: [VaultRecipient]
    ) {
        try underWriteLock(
            creating: false, withoutDirectory: { nil },
            { file in
                var contents = try load()
                let before = contents.recipients ?? []
                let after = try change(before)
                guard !after.isEmpty else {
                    throw KeychainError.lastRecipient(path: path)
                }
                (contents.header, contents.recipients) = (
                    try AgeFile.makeHeader(recipients: after.map(\.recipient)), after
                )
                try write(contents, to: file)
                return (before, after)
            })
    }

    /// Re-encrypts the vault to a new passphrase, asked of the passphrase source with
    /// ``PassphrasePurpose/change`` once the vault is open, with a new file key at this store's
    /// work factor; a team vault becomes a passphrase vault. The new passphrase is asked, and its
    /// scrypt run, before the write lock is taken.
    /// - Returns: false when there is no vault to change.
    public func changePassphrase() throws(KeychainError) -> Bool {
        guard try load().file != nil else { return false }
        let passphrase = try passphraseSource(.change)
        guard !passphrase.isEmpty else {
            throw KeychainError.noNewPassphrase(detail: "it is empty")
        }
        let header = try header(passphrase: passphrase)
        return try underWriteLock(
            creating: false, withoutDirectory: { false },
            { file in
                var contents = try load()
                guard contents.file != nil else { return false }
                (contents.header, contents.recipients) = (header, nil)
                try write(contents, to: file)
                state.withLock { $0.passphrase = passphrase }
                return true
            })
    }

    /// The recipients of the identities this store was given whose stanza the vault's header
    /// has (for doctor: which identity opens the vault); nil when there is no vault or it is a
    /// passphrase vault.
    public func identitiesThatOpen() throws(KeychainError) -> [String]? {
        let file: [UInt8]?
        do {
            file = try readFileIfPresent(filePath, limit: Self.maximumFileSize, regular: true)
        } catch {
            throw KeychainError.vaultIO(detail: error.description)
        }
        guard let file else { return nil }
        do {
            return try AgeFile.identitiesOpening(file, identities.map(\.key))?.map { identities[$0].recipient }
        } catch AgeFile.Failure.malformed(let reason) {
            throw KeychainError.vaultCorrupt(path: path, reason: reason)
        } catch {
            throw KeychainError.vaultCorrupt(path: path, reason: "\(error)")
        }
    }
}
