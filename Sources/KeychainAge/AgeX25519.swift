import Crypto
import Glibc

/// age's X25519 recipient type (https://age-encryption.org/v1, "The X25519 recipient type"):
/// `age1…` recipients and `AGE-SECRET-KEY-1…` identities.
package enum AgeX25519 {
    static let label = Array("age-encryption.org/v1/X25519".utf8)

    /// An identity: a private key that opens the X25519 stanzas made for its recipient.
    package struct Identity: AgeIdentity {
        let privateKey: Curve25519.KeyAgreement.PrivateKey

        /// A new random identity.
        package init() { privateKey = Curve25519.KeyAgreement.PrivateKey() }

        /// The identity an `AGE-SECRET-KEY-1…` line holds; nil when it is not one.
        init?(_ text: String) {
            guard text.hasPrefix("AGE-SECRET-KEY-1"), let (hrp, data) = Bech32.decode(text),
                hrp == "age-secret-key-", data.count == 32,
                let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: data)
            else { return nil }
            privateKey = key
        }

        /// The identity of a 32-byte X25519 private key (as ``withRawKey(_:)`` gives it); nil for
        /// other bytes.
        package init?(rawKey: UnsafeRawBufferPointer) {
            guard rawKey.count == 32, let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawKey)
            else { return nil }
            privateKey = key
        }

        /// Calls `body` with the private key's 32 bytes, which it must not keep.
        package func withRawKey<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
            var bytes = Array(privateKey.rawRepresentation)
            defer { explicit_bzero(&bytes, bytes.count) }
            return try bytes.withUnsafeBytes(body)
        }

        /// `AGE-SECRET-KEY-1…`, as age-keygen writes it.
        var encoded: String {
            Bech32.encode(hrp: "age-secret-key-", data: Array(privateKey.rawRepresentation)).uppercased()
        }

        var recipient: Recipient { Recipient(publicKey: privateKey.publicKey) }
        package var stanzaType: String { "X25519" }
        package var recipientText: String { recipient.encoded }

        /// The file key an `X25519` stanza wraps for this identity, or nil when it is for another
        /// one. Throws for a malformed stanza (a bad share, or one giving an all-zero secret).
        package func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]? {
            guard stanza.arguments.count == 2, let share = AgeFile.decodeBase64(stanza.arguments[1]), share.count == 32,
                stanza.body.count == 32
            else { throw AgeFile.Failure.malformed("an X25519 recipient stanza is malformed") }
            guard let ephemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: share),
                let shared = try? privateKey.sharedSecretFromKeyAgreement(with: ephemeral)
            else { throw AgeFile.Failure.malformed("an X25519 recipient stanza has an invalid share") }
            // The spec: reject an all-zero shared secret (a low-order share); swift-crypto does not.
            guard shared.withUnsafeBytes({ bytes in bytes.contains { $0 != 0 } }) else {
                throw AgeFile.Failure.malformed("an X25519 recipient stanza has a low-order share")
            }
            let wrapKey = shared.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: share + Array(privateKey.publicKey.rawRepresentation), sharedInfo: label,
                outputByteCount: 32)
            return AgeFile.unwrap(stanza.body, with: wrapKey)
        }
    }

    /// A recipient: the public key files are encrypted to.
    struct Recipient: AgeRecipient, Hashable {
        let publicKey: Curve25519.KeyAgreement.PublicKey

        init(publicKey: Curve25519.KeyAgreement.PublicKey) { self.publicKey = publicKey }

        /// The recipient an `age1…` string names; nil when it is not one.
        init?(_ text: String) {
            guard text.hasPrefix("age1"), let (hrp, data) = Bech32.decode(text), hrp == "age", data.count == 32,
                let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: data)
            else { return nil }
            publicKey = key
        }

        var encoded: String { Bech32.encode(hrp: "age", data: Array(publicKey.rawRepresentation)) }

        /// A stanza that wraps `fileKey` for this recipient, with a new ephemeral key.
        package func wrap(_ fileKey: [UInt8]) throws -> AgeFile.Stanza {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = Array(ephemeral.publicKey.rawRepresentation)
            let shared = try ephemeral.sharedSecretFromKeyAgreement(with: publicKey)
            let wrapKey = shared.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: share + Array(publicKey.rawRepresentation), sharedInfo: label,
                outputByteCount: 32)
            return AgeFile.Stanza(
                arguments: ["X25519", AgeFile.base64(share)], body: try AgeFile.wrap(fileKey, with: wrapKey))
        }

        static func == (lhs: Recipient, rhs: Recipient) -> Bool {
            lhs.publicKey.rawRepresentation == rhs.publicKey.rawRepresentation
        }
        func hash(into hasher: inout Hasher) { hasher.combine(publicKey.rawRepresentation) }
    }
}
