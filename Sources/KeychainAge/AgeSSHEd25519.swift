import Crypto
import FoundationEssentials

/// age's ssh-ed25519 recipient type (age's agessh package, as the age spec links it):
/// `ssh-ed25519 AAAA…` public keys as recipients, unencrypted OpenSSH ed25519 private keys as
/// identities. The X25519 exchange runs on the key converted to Montgomery form, with a tweak
/// derived from the public key, so a stanza names its recipient only by a 4-byte tag.
package enum AgeSSHEd25519 {
    static let stanzaType = "ssh-ed25519"
    static let label = Array("age-encryption.org/v1/ssh-ed25519".utf8)

    /// The parts both sides derive from the public key.
    struct PublicParts: Sendable {
        /// The public key in SSH wire form (string "ssh-ed25519", string key).
        let wire: [UInt8]
        /// base64 of the first 4 bytes of SHA-256(wire): the stanza's first argument.
        let tag: String
        /// The X25519 public key of the same secret.
        let montgomery: Curve25519.KeyAgreement.PublicKey
        /// HKDF-SHA-256 with no secret, the wire form as salt and the label as info: the scalar
        /// the shared secret is multiplied by.
        let tweak: Curve25519.KeyAgreement.PrivateKey

        init?(edwards publicKey: [UInt8]) {
            guard let u = Ed25519.montgomeryU(ofPublicKey: publicKey),
                let montgomery = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: u)
            else { return nil }
            wire = sshString(Array(stanzaType.utf8)) + sshString(publicKey)
            tag = AgeFile.base64(Array(SHA256.hash(data: wire).prefix(4)))
            self.montgomery = montgomery
            let tweak = HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: [UInt8]()), salt: wire, info: label, outputByteCount: 32)
            guard let scalar = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: tweak.bytes) else {
                return nil
            }
            self.tweak = scalar
        }

        /// The wrapping key for a stanza with `share`, from the X25519 secret `shared`.
        func wrapKey(shared: SharedSecret, share: [UInt8]) throws -> SymmetricKey {
            let point = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: shared.withUnsafeBytes { Array($0) })
            let tweaked = try tweak.sharedSecretFromKeyAgreement(with: point)
            guard tweaked.withUnsafeBytes({ $0.contains { $0 != 0 } }) else {
                throw AgeFile.Failure.malformed("an ssh-ed25519 recipient stanza has a low-order share")
            }
            return tweaked.hkdfDerivedSymmetricKey(
                using: SHA256.self, salt: share + Array(montgomery.rawRepresentation), sharedInfo: label,
                outputByteCount: 32)
        }
    }

    struct Recipient: AgeRecipient {
        let parts: PublicParts

        /// The recipient a `ssh-ed25519 AAAA… [comment]` line names; nil when it is not one.
        init?(_ line: String) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, fields[0] == "ssh-ed25519", let wire = Data(base64Encoded: String(fields[1])),
                let key = parseWirePublicKey(Array(wire)), let parts = PublicParts(edwards: key)
            else { return nil }
            self.parts = parts
        }

        init(parts: PublicParts) { self.parts = parts }

        /// `ssh-ed25519 AAAA…`, without a comment.
        var encoded: String { "ssh-ed25519 \(Data(parts.wire).base64EncodedString())" }

        package func wrap(_ fileKey: [UInt8]) throws -> AgeFile.Stanza {
            let ephemeral = Curve25519.KeyAgreement.PrivateKey()
            let share = Array(ephemeral.publicKey.rawRepresentation)
            let key = try parts.wrapKey(
                shared: ephemeral.sharedSecretFromKeyAgreement(with: parts.montgomery), share: share)
            return AgeFile.Stanza(
                arguments: [stanzaType, parts.tag, AgeFile.base64(share)], body: try AgeFile.wrap(fileKey, with: key))
        }
    }

    package struct Identity: AgeIdentity {
        let parts: PublicParts
        /// The X25519 private key of the Ed25519 seed: the first half of SHA-512(seed).
        let privateKey: Curve25519.KeyAgreement.PrivateKey

        package var stanzaType: String { AgeSSHEd25519.stanzaType }
        package var recipientText: String { Recipient(parts: parts).encoded }

        /// The identity of an unencrypted OpenSSH private key file.
        init(openSSH text: String) throws(IdentityFileError) {
            let (seed, publicKey) = try parseOpenSSHPrivateKey(text)
            try self.init(seed: seed, publicKey: publicKey)
        }

        /// The identity of an Ed25519 key: its 32-byte seed and public key.
        package init(seed: [UInt8], publicKey: [UInt8]) throws(IdentityFileError) {
            guard let parts = PublicParts(edwards: publicKey),
                let privateKey = try? Curve25519.KeyAgreement.PrivateKey(
                    rawRepresentation: Array(SHA512.hash(data: seed).prefix(32)))
            else { throw IdentityFileError(line: nil, reason: "its ed25519 public key is not a valid point") }
            guard privateKey.publicKey.rawRepresentation == parts.montgomery.rawRepresentation else {
                throw IdentityFileError(line: nil, reason: "its private and public keys do not belong together")
            }
            self.parts = parts
            self.privateKey = privateKey
        }

        package func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]? {
            guard stanza.arguments.count == 3, let share = AgeFile.decodeBase64(stanza.arguments[2]),
                share.count == 32, stanza.body.count == 32
            else { throw AgeFile.Failure.malformed("an ssh-ed25519 recipient stanza is malformed") }
            guard stanza.arguments[1] == parts.tag else { return nil }  // made for another key
            guard let point = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: share),
                let shared = try? privateKey.sharedSecretFromKeyAgreement(with: point),
                shared.withUnsafeBytes({ $0.contains { $0 != 0 } })
            else { throw AgeFile.Failure.malformed("an ssh-ed25519 recipient stanza has an invalid share") }
            return AgeFile.unwrap(stanza.body, with: try parts.wrapKey(shared: shared, share: share))
        }
    }
}

// MARK: The SSH formats (RFC 4251 strings, OpenSSH's PROTOCOL.key)

private func sshString(_ bytes: [UInt8]) -> [UInt8] {
    withUnsafeBytes(of: UInt32(bytes.count).bigEndian, Array.init) + bytes
}

/// Reads RFC 4251 `uint32` and `string` fields in turn.
private struct WireReader {
    var bytes: ArraySlice<UInt8>

    mutating func uint32() -> UInt32? {
        guard bytes.count >= 4 else { return nil }
        defer { bytes = bytes.dropFirst(4) }
        return bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func string() -> [UInt8]? {
        guard let length = uint32(), bytes.count >= Int(length) else { return nil }
        defer { bytes = bytes.dropFirst(Int(length)) }
        return Array(bytes.prefix(Int(length)))
    }
}

/// The 32-byte key of an `ssh-ed25519` public key in wire form; nil for anything else.
private func parseWirePublicKey(_ wire: [UInt8]) -> [UInt8]? {
    var reader = WireReader(bytes: wire[...])
    guard reader.string() == Array("ssh-ed25519".utf8), let key = reader.string(), key.count == 32,
        reader.bytes.isEmpty
    else { return nil }
    return key
}

/// The seed and public key of an unencrypted `-----BEGIN OPENSSH PRIVATE KEY-----` ed25519 key.
private func parseOpenSSHPrivateKey(_ text: String) throws(IdentityFileError) -> (seed: [UInt8], publicKey: [UInt8]) {
    func failure(_ reason: String) -> IdentityFileError { IdentityFileError(line: nil, reason: reason) }
    let lines = text.split(whereSeparator: \.isNewline).map { $0.filter { !$0.isWhitespace } }
    guard let begin = lines.firstIndex(of: "-----BEGINOPENSSHPRIVATEKEY-----"),
        let end = lines.firstIndex(of: "-----ENDOPENSSHPRIVATEKEY-----"), begin < end,
        let decoded = Data(base64Encoded: lines[(begin + 1)..<end].joined())
    else { throw failure("it is not an OpenSSH private key file") }
    let magic = Array("openssh-key-v1\0".utf8)
    guard decoded.starts(with: magic) else { throw failure("it is not an OpenSSH private key (no openssh-key-v1)") }
    var reader = WireReader(bytes: Array(decoded)[magic.count...])
    guard let cipher = reader.string(), let kdf = reader.string(), reader.string() != nil,
        let count = reader.uint32(), let publicWire = reader.string(), let privatePart = reader.string()
    else { throw failure("its OpenSSH key is truncated") }
    guard cipher == Array("none".utf8), kdf == Array("none".utf8) else {
        throw failure(
            "it is passphrase-protected; only unencrypted keys are read (use an age identity, "
                + "or an unencrypted copy: ssh-keygen -p -N '' -f COPY)")
    }
    guard count == 1 else { throw failure("it holds \(count) keys; give a file with one") }
    guard let publicKey = parseWirePublicKey(publicWire) else {
        throw failure("it is not an ed25519 key; age's ssh support here is ssh-ed25519 only")
    }
    var secret = WireReader(bytes: privatePart[...])
    guard let check1 = secret.uint32(), let check2 = secret.uint32(), check1 == check2,
        secret.string() == Array("ssh-ed25519".utf8), secret.string() == publicKey, let both = secret.string(),
        both.count == 64, Array(both[32...]) == publicKey
    else { throw failure("its private key section is malformed") }
    return (Array(both[..<32]), publicKey)
}
