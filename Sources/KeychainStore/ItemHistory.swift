import Crypto
import FoundationEssentials

/// One version of an item in its backend's history (`keychain-cli history`): a git commit that
/// changed a tree vault's item file, or a KV version 2 version of an OpenBao secret.
public struct ItemVersion: Sendable, Equatable {
    /// What the version did to the item.
    public enum Change: String, Sendable, Equatable {
        case created
        case valueChanged = "value changed"
        /// Its label, attributes or content type changed, not its value.
        case detailsChanged = "details changed"
        /// Encrypted again (to other recipients, say); its value and details are the same.
        case reencrypted = "re-encrypted"
        case deleted
        /// A version the identities given do not open (written before one of them was a
        /// recipient), or a damaged one.
        case unreadable = "cannot be opened"
        /// The first version the identities given open, after versions they do not: what it
        /// changed cannot be told.
        case readable = "first readable"
    }

    /// What names the version for ``VersionedSecretStore/secret(service:key:at:)``: a commit's
    /// hash, a version number.
    public var revision: String
    public var date: Date?
    /// Who made it, where the backend records it (git's author; OpenBao records nobody).
    public var author: String?
    public var change: Change
    /// The value's fingerprint at this version (``Change/deleted``: nil), where the backend has a
    /// key to make one; equal values have equal fingerprints.
    public var fingerprint: String?

    public init(revision: String, date: Date?, author: String?, change: Change, fingerprint: String?) {
        (self.revision, self.date, self.author, self.change, self.fingerprint) = (
            revision, date, author, change, fingerprint
        )
    }
}

/// A store that keeps earlier versions of its items: `history` lists them and `rollback` writes
/// one of them again, as a new version.
public protocol VersionedSecretStore: SecretStore {
    /// The versions of the item, newest first; empty when it never existed.
    /// - Throws: ``KeychainError/noHistory(detail:)`` when the store keeps no history here
    ///   (a tree vault outside a git work tree), or the backend's own errors.
    func history(service: ServiceName, key: KeychainKey) throws(KeychainError) -> [ItemVersion]

    /// The item's secret as `revision` left it; nil when it had none there (not yet created, or
    /// deleted).
    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` for a revision the backend does not
    ///   know, or the backend's own errors.
    func secret(service: ServiceName, key: KeychainKey, at revision: String) throws(KeychainError) -> Data?
}

/// A value's fingerprint: the first 8 bytes of HMAC-SHA256 under `key` of a fixed prefix and the
/// value, in hex. Under a key the readers share, equal values are recognisable and a value cannot
/// be guessed from it without the key.
package func valueFingerprint(_ secret: some DataProtocol, key: SymmetricKey) -> String {
    var hmac = HMAC<SHA256>(key: key)
    hmac.update(data: Array("keychain-cli fingerprint v1\0".utf8))
    hmac.update(data: secret)
    let code = hmac.finalize()
    let digits = Array("0123456789abcdef")
    return String(code.prefix(8).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
}
