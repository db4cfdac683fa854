import Crypto
import KeychainSystem

/// An identity whose private key is opened only when a stanza made for it is met: a
/// passphrase-protected ssh key, known by its public key (which the key file holds in the clear)
/// until then, so that a vault encrypted to other keys, or one `unlock`'s holder opens, never
/// asks for its passphrase. It is opened once (a failure too is kept, so that it is not asked
/// again by each item of a tree vault), and the key opened is kept for the process.
package final class AgeDeferredIdentity: AgeIdentity, @unchecked Sendable {
    package let stanzaType: String
    package let recipientText: String
    /// The first argument of the stanzas made for it (their recipient's tag).
    private let tag: String
    private let open: @Sendable () throws -> any AgeIdentity
    /// The identity once opened, or why it could not be.
    private let opened = Locked<Result<any AgeIdentity, any Error>?>(nil)

    package init(
        stanzaType: String, recipientText: String, tag: String, open: @escaping @Sendable () throws -> any AgeIdentity
    ) {
        (self.stanzaType, self.recipientText, self.tag, self.open) = (stanzaType, recipientText, tag, open)
    }

    /// A stanza tagged for another key is not for this one: nil, and nothing is asked.
    package func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]? {
        if stanza.arguments.count > 1, stanza.arguments[1] != tag { return nil }
        return try identity().unwrap(stanza)
    }

    /// The identity, opened now if it was not (other threads wait meanwhile, and then share it).
    package func identity() throws -> any AgeIdentity {
        try opened.withLock { (opened) throws(any Error) -> any AgeIdentity in
            if let known = opened { return try known.get() }
            let result = Result { try open() }
            opened = result
            return try result.get()
        }
    }
}

extension AgeSSHEd25519 {
    /// The identity of a passphrase-protected OpenSSH ed25519 key, known by its 32-byte public
    /// key; `seed` gives its 32-byte private seed (decrypting the key: its passphrase asked) when
    /// a stanza made for it is first met, and what it returns is wiped once the key is derived.
    /// Nil when `publicKey` is no ed25519 point.
    package static func deferredIdentity(publicKey: [UInt8], seed: @escaping @Sendable () throws -> [UInt8])
        -> AgeDeferredIdentity?
    {
        guard let parts = PublicParts(edwards: publicKey) else { return nil }
        return AgeDeferredIdentity(
            stanzaType: stanzaType, recipientText: Recipient(parts: parts).encoded, tag: parts.tag
        ) {
            var bytes = try seed()
            defer { wipe(&bytes) }
            return try Identity(seed: bytes, publicKey: publicKey)
        }
    }
}

// What `unlock`'s holder keeps of a team tree vault's ssh-ed25519 identity: its X25519 private
// key and its Ed25519 public key (64 bytes), never the seed (which signs).
extension AgeSSHEd25519.Identity {
    /// The identity of the 64 bytes ``withRawKey(_:)`` gives; nil for other bytes.
    package init?(rawKey: UnsafeRawBufferPointer) {
        guard rawKey.count == 64, let parts = AgeSSHEd25519.PublicParts(edwards: Array(rawKey[32...])),
            let key = try? Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: UnsafeRawBufferPointer(rebasing: rawKey[..<32])),
            key.publicKey.rawRepresentation == parts.montgomery.rawRepresentation
        else { return nil }
        (self.parts, privateKey) = (parts, key)
    }

    /// Calls `body` with the X25519 private key's 32 bytes then the Ed25519 public key's 32,
    /// which it must not keep.
    package func withRawKey<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var bytes = Array(privateKey.rawRepresentation) + parts.wire.suffix(32)
        defer { wipe(&bytes) }
        return try bytes.withUnsafeBytes(body)
    }
}
