import Crypto
import FoundationEssentials
import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem

// A tree vault's fingerprint key, `.fingerprint.age`: 32 random bytes, encrypted to the vault's
// recipients as an item is. A value's fingerprint is HMAC-SHA256(key, "keychain-cli fingerprint
// v1\0" ‖ secret), shown as 16 hex digits: a diff shows that a value changed, or that two values
// are equal, and only a holder of the key (a recipient, who can read the values anyway) could
// test a guess against one. Removing a recipient makes a new key, so that a removed member holds
// no oracle for the values written after.
extension TreeVaultStore {
    /// The fingerprint key's file, relative to the directory.
    public static let fingerprintFile = ".fingerprint.age"
    static let fingerprintKeySize = 32

    /// The fingerprint of `secret` under `key`: 16 lower-case hex digits (64 bits of HMAC-SHA256).
    public static func fingerprint(of secret: Data, key: [UInt8]) -> String {
        valueFingerprint(secret, key: SymmetricKey(data: key))
    }

    /// The vault's fingerprint key, decrypted in memory; nil when it has none (made before
    /// fingerprints, or by another tool: `vault git-setup` makes it).
    /// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` when no identity given opens it,
    ///   ``KeychainError/itemCorrupt(path:reason:)`` when it is not a fingerprint key.
    public func fingerprintKey() throws(KeychainError) -> [UInt8]? {
        let file = path(Self.fingerprintFile)
        guard let bytes = try readSmallFile(file, limit: 1 << 16) else { return nil }
        return try fingerprintKey(in: bytes, file: file)
    }

    /// The fingerprint key the file `bytes` (a version of `.fingerprint.age`, named `file` in
    /// messages) holds, decrypted in memory.
    public func fingerprintKey(in bytes: [UInt8], file: String) throws(KeychainError) -> [UInt8] {
        let key = try decryptToIdentities(bytes, file: file)
        guard key.count == Self.fingerprintKeySize else {
            throw .itemCorrupt(path: file, reason: "it holds \(key.count) bytes, not a 32-byte fingerprint key")
        }
        return key
    }

    /// Makes the fingerprint key, under the vault's lock, when the vault has none; true when it
    /// made one. Only the recipients are needed, no identity.
    public func makeFingerprintKeyIfMissing() throws(KeychainError) -> Bool {
        try underLock(authenticated: false) { () throws(KeychainError) -> Bool in
            guard access(path(Self.fingerprintFile), F_OK) != 0 else { return false }
            try Self.writeFingerprintKey(Self.newFingerprintKey(), in: directory, to: try recipients())
            return true
        }
    }

    /// The fingerprint key again for `after` (the caller holds the lock): a new key when a
    /// recipient of `before` is not in `after`, else the same key re-encrypted (none is made for
    /// a vault that has none).
    func rekeyFingerprint(before: [VaultRecipient], after: [VaultRecipient]) throws(KeychainError) {
        if before.contains(where: { !after.contains($0) }) {
            try Self.writeFingerprintKey(Self.newFingerprintKey(), in: directory, to: after)
        } else if var key = try fingerprintKey() {
            defer { wipe(&key) }
            try Self.writeFingerprintKey(key, in: directory, to: after)
        }
    }

    /// The fingerprint key of a merge of two versions of `.fingerprint.age` (git's merge driver),
    /// encrypted to `recipients`, the merged ones: the same key when both sides hold the same (each
    /// re-encrypted it), else a new one (a side that removed a member made one; neither side's is
    /// kept, so no member removed on either side holds the merged key). Nil when `recipients` is
    /// nil or empty (not known): a conflict then.
    public func mergeFingerprintKeys(ours: [UInt8], theirs: [UInt8], to recipients: [VaultRecipient]?)
        throws(KeychainError) -> [UInt8]?
    {
        guard let recipients, !recipients.isEmpty else { return nil }
        var mine = try fingerprintKey(in: ours, file: "ours")
        var other = try fingerprintKey(in: theirs, file: "theirs")
        defer {
            wipe(&mine)
            wipe(&other)
        }
        var key = mine == other ? mine : Self.newFingerprintKey()
        defer { wipe(&key) }
        do {
            return try AgeFile.encrypt(key, header: try AgeFile.makeHeader(recipients: recipients.map(\.recipient)))
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch {
            throw .vaultIO(detail: "cannot encrypt the fingerprint key: \(error)")
        }
    }

    static func newFingerprintKey() -> [UInt8] {
        var key = [UInt8](repeating: 0, count: fingerprintKeySize)
        fillWithSystemRandomBytes(&key)
        return key
    }

    static func writeFingerprintKey(_ key: [UInt8], in directory: String, to recipients: [VaultRecipient])
        throws(KeychainError)
    {
        let file = "\(directory)/\(fingerprintFile)"
        do {
            let header = try AgeFile.makeHeader(recipients: recipients.map(\.recipient))
            try writeFileAtomically(file, try AgeFile.encrypt(key, header: header))
        } catch let failure as AgePlugin.Failure {
            throw KeychainError(failure)
        } catch let error as FileError {
            throw .vaultIO(detail: error.description)
        } catch {
            throw .vaultIO(detail: "cannot write \(quotedPath(file)): \(error)")
        }
    }
}

/// What a diff shows of an item file: everything but its value, which only its fingerprint stands
/// for (`vault textconv`, `vault diff`).
public struct TreeVaultItemSummary: Sendable, Equatable {
    public var service: String
    public var key: String
    /// The value's fingerprint; nil when the vault has no fingerprint key, or none was given.
    public var fingerprint: String?
    public var label: String?
    public var attributes: [String: String]?
    public var contentType: String?
    public var created: Date?
    public var modified: Date?
    /// The types of the file's recipient stanzas, in order.
    public var stanzaTypes: [String]
    /// SHA-256 of the value: tells equal values from different ones in memory, never shown.
    let valueDigest: [UInt8]

    /// Whether the two items hold the same value.
    public func sameValue(as other: Self) -> Bool { valueDigest == other.valueDigest }
}

extension TreeVaultStore {
    /// The types of the recipient stanzas of the age file `bytes`; nil when it is not one.
    public static func stanzaTypes(of bytes: [UInt8]) -> [String]? { try? AgeFile.stanzaTypes(bytes) }

    /// The item file `bytes` (named `file` in messages) described without its value, decrypted
    /// in memory (it must name `address`, when one is given: a file copied over another item's
    /// is none of it); its value's fingerprint under `fingerprintKey`.
    /// - Throws: what ``open(_:at:file:)`` throws.
    public func summary(of bytes: [UInt8], at address: SecretAddress? = nil, file: String, fingerprintKey: [UInt8]?)
        throws(KeychainError) -> TreeVaultItemSummary
    {
        let item = try open(bytes, at: address, file: file)
        guard var secret = item.bytes else { throw .itemCorrupt(path: file, reason: "its secret is malformed") }
        defer { wipe(&secret) }
        var digest = SHA256()
        digest.update(data: secret)
        return TreeVaultItemSummary(
            service: item.service, key: item.key,
            fingerprint: fingerprintKey.map { Self.fingerprint(of: secret, key: $0) }, label: item.label,
            attributes: item.attributes, contentType: item.contentType, created: item.created,
            modified: item.modified, stanzaTypes: Self.stanzaTypes(of: bytes) ?? [],
            valueDigest: Array(digest.finalize()))
    }
}
