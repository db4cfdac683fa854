import Crypto
import FoundationEssentials
import KeychainAge
import KeychainSSH
import KeychainSystem

/// age's ssh-rsa recipient type (age's agessh package, as the age spec links it): `ssh-rsa AAAA…`
/// public keys as recipients, OpenSSH RSA private keys (2048 bits or more) as identities. The
/// file key is encrypted with RSA-OAEP (SHA-256, MGF1 SHA-256, the label
/// "age-encryption.org/v1/ssh-rsa"); the stanza is `-> ssh-rsa TAG`, TAG the base64 of the first
/// 4 bytes of SHA-256 of the public key's wire form, its body the ciphertext.
///
/// A target of its own: libgcrypt does the OAEP (swift-crypto's takes no label), and the
/// KeychainVault product links swift-crypto alone. The command line registers it at start
/// (``register()``); a program on the library alone reads no ssh-rsa recipient.
package enum AgeSSHRSA {
    static let stanzaType = "ssh-rsa"
    static let label = Array("age-encryption.org/v1/ssh-rsa".utf8)
    /// The smallest modulus age takes.
    static let minimumBits = 2048

    /// Makes `ssh-rsa AAAA… [comment]` lines vault recipients (``VaultRecipient/init(_:)``).
    package static func register() {
        AgeRecipientTypes.register(type: stanzaType) { text in
            let fields = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard fields.count >= 2, let publicKey = try? SSHPublicKey(line: text),
                let recipient = try? Recipient(publicKey)
            else {
                return .failure(
                    .invalid(
                        "the ssh-rsa line given is not a valid ssh-rsa public key of \(minimumBits) bits or more. Give "
                            + "the whole line of the .pub file (ssh-rsa AAAA… comment)"))
            }
            return .success((publicKey.line, fields.count > 2 ? String(fields[2]) : "", recipient))
        }
    }

    /// The public key, as both sides use it.
    struct Recipient: AgeRecipient {
        let n: [UInt8]
        let e: [UInt8]
        let tag: String
        let line: String

        init(_ publicKey: SSHPublicKey) throws(SSHKeyError) {
            guard publicKey.type == stanzaType else {
                throw .unsupported("\(publicKey.type) keys as ssh-rsa recipients")
            }
            var reader = SSHWireReader(publicKey.wire, "the ssh-rsa public key")
            _ = try reader.string()
            let exponent = try reader.positiveMPInt()
            let modulus = try reader.positiveMPInt()
            try reader.end()
            let bits = modulus.first.map { modulus.count * 8 - $0.leadingZeroBitCount } ?? 0
            guard bits >= minimumBits, !exponent.isEmpty else {
                throw .unsupported("an ssh-rsa key of \(bits) bits (age takes \(minimumBits) or more)")
            }
            tag = String(Data(SHA256.hash(data: publicKey.wire).prefix(4)).base64EncodedString().prefix { $0 != "=" })
            line = publicKey.line
            (n, e) = (modulus, exponent)
        }

        package func wrap(_ fileKey: [UInt8]) throws -> AgeFile.Stanza {
            guard let body = GcryptOAEP.encrypt(fileKey, n: n, e: e, label: label) else {
                throw AgeFile.Failure.malformed("libgcrypt did not encrypt to the ssh-rsa recipient")
            }
            return AgeFile.Stanza([stanzaType, tag], body: body)
        }
    }

    /// An RSA private key: its public half and its private exponent (wiped when it goes).
    final class Identity: AgeIdentity, @unchecked Sendable {
        // @unchecked: `d` is written in init and deinit only.
        let recipient: Recipient
        private var d: [UInt8]

        var stanzaType: String { AgeSSHRSA.stanzaType }
        var recipientText: String { recipient.line }

        init(_ key: SSHPrivateKey) throws(SSHKeyError) {
            recipient = try Recipient(key.publicKey)
            guard let d = try key.withRSANumbers({ _, _, d in d }) else { throw .unsupported("not an RSA key") }
            self.d = d
        }

        deinit { wipe(&d) }

        /// The file key of a stanza tagged for this key; nil for another key's. A stanza tagged
        /// for it that does not decrypt is malformed, as age holds it.
        func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]? {
            guard stanza.arguments.count == 2 else {
                throw AgeFile.Failure.malformed("an ssh-rsa recipient stanza is malformed")
            }
            guard stanza.arguments[1] == recipient.tag else { return nil }
            guard stanza.body.count == recipient.n.count,
                var fileKey = GcryptOAEP.decrypt(stanza.body, n: recipient.n, e: recipient.e, d: d, label: label)
            else { throw AgeFile.Failure.malformed("an ssh-rsa recipient stanza does not decrypt with its key") }
            guard fileKey.count == 16 else {
                wipe(&fileKey)
                throw AgeFile.Failure.malformed("an ssh-rsa recipient stanza holds no file key")
            }
            return fileKey
        }
    }

    /// The identity of an OpenSSH RSA private key file: opened now when it is not encrypted;
    /// else known by its public key, and `open` (which asks its passphrase) called when a stanza
    /// made for it is first met. Nil for a file that is no RSA key.
    package static func identity(file: [UInt8], open: @escaping @Sendable () throws -> SSHPrivateKey)
        throws(SSHKeyError) -> VaultIdentity?
    {
        let publicKey = try SSHPrivateKey.publicKey(ofFile: file)
        guard publicKey.type == stanzaType else { return nil }
        let recipient = try Recipient(publicKey)
        guard try SSHPrivateKey.isEncrypted(file) else {
            let key = try SSHPrivateKey(file: file) { () throws(SSHKeyError) in throw .wrongPassphrase }
            return VaultIdentity(key: try Identity(key))
        }
        return VaultIdentity(
            key: AgeDeferredIdentity(stanzaType: stanzaType, recipientText: recipient.line, tag: recipient.tag) {
                try Identity(try open())
            })
    }
}
