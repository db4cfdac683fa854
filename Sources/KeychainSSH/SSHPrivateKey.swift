import Crypto
import FoundationEssentials
import KeychainSystem

/// An ed25519 key from an OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`,
/// OpenSSH's PROTOCOL.key), unencrypted or passphrase-protected (bcrypt KDF; aes128/192/256-ctr,
/// aes256-gcm@openssh.com): it signs as `ssh-keygen -Y sign` does with that key.
package struct SSHPrivateKey: SSHSigner {
    package let publicKey: SSHPublicKey
    private let key: Curve25519.Signing.PrivateKey

    /// Whether `file` is an OpenSSH private key file whose keys are passphrase-protected.
    package static func isEncrypted(_ file: [UInt8]) throws(SSHKeyError) -> Bool {
        try OpenSSHKeyFile(file).cipher != "none"
    }

    /// The key of `file`; `passphrase` is called only for an encrypted key, and what it returns
    /// is wiped once the key is derived.
    package init(file: [UInt8], passphrase: () throws(SSHKeyError) -> [UInt8]) throws(SSHKeyError) {
        let container = try OpenSSHKeyFile(file)
        var section: [UInt8]
        if container.cipher == "none" {
            guard container.kdf == "none", container.kdfOptions.isEmpty, container.tag.isEmpty else {
                throw .malformed("the unencrypted private key has KDF options or a tag")
            }
            section = container.privateSection
        } else {
            var secret = try passphrase()
            defer { wipe(&secret) }
            section = try SSHKeyDecryption.decrypt(container, passphrase: secret)
        }
        defer { wipe(&section) }
        var seed = try Self.seed(ofSection: section, blockSize: container.cipher == "none" ? 8 : 16)
        defer { wipe(&seed) }
        let key: Curve25519.Signing.PrivateKey
        do { key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed) } catch {
            throw .malformed("the ed25519 private key is not a valid key")
        }
        let publicKey = try SSHPublicKey(wire: container.publicKey)
        guard publicKey.wire == SSHWire.string("ssh-ed25519") + SSHWire.string(Array(key.publicKey.rawRepresentation))
        else { throw .malformed("the private key does not belong to the file's public key") }
        self.publicKey = publicKey
        self.key = key
    }

    /// The 32-byte seed of the one ed25519 key of a decrypted private section (check integers,
    /// the key, its comment, padding 1, 2, 3, …); a check mismatch is a wrong passphrase.
    private static func seed(ofSection section: [UInt8], blockSize: Int) throws(SSHKeyError) -> [UInt8] {
        var reader = SSHWireReader(section, "the private key section")
        guard try reader.uint32() == reader.uint32() else { throw .wrongPassphrase }
        let type = try reader.text()
        guard type == "ssh-ed25519" else { throw .unsupported("\(type) private keys (ed25519 only)") }
        let publicKey = try reader.string()
        var both = try reader.string()
        defer { wipe(&both) }
        guard publicKey.count == 32, both.count == 64, Array(both[32...]) == publicKey else {
            throw .malformed("the ed25519 private key's fields do not fit together")
        }
        _ = try reader.string()  // the comment
        let padding = Array(reader.bytes)
        guard section.count % blockSize == 0, padding.count < blockSize,
            padding.enumerated().allSatisfy({ $0.element == UInt8($0.offset + 1) })
        else { throw .malformed("the private key section's padding is wrong") }
        return Array(both[..<32])
    }

    package func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        let signature: Data
        do { signature = try key.signature(for: data) } catch { throw .malformed("ed25519 signing failed") }
        return SSHWire.string("ssh-ed25519") + SSHWire.string(Array(signature))
    }
}

/// The fields of an OpenSSH private key file (PROTOCOL.key) holding one key, its private section
/// still as stored (encrypted unless `cipher` is "none").
struct OpenSSHKeyFile {
    let cipher: String
    let kdf: String
    let kdfOptions: [UInt8]
    let publicKey: [UInt8]
    let privateSection: [UInt8]
    /// The authentication tag after the private section (aes256-gcm@openssh.com), else empty.
    let tag: [UInt8]

    init(_ file: [UInt8]) throws(SSHKeyError) {
        guard file.count <= 64 * 1024 else { throw .malformed("the private key file is over 64 KiB") }
        let lines = file.split(whereSeparator: { $0 == 0x0a || $0 == 0x0d }).map { $0.filter { $0 > 0x20 } }
        let begin = Array("-----BEGINOPENSSHPRIVATEKEY-----".utf8)
        let end = Array("-----ENDOPENSSHPRIVATEKEY-----".utf8)
        guard let first = lines.firstIndex(where: { $0.elementsEqual(begin) }),
            let last = lines.lastIndex(where: { $0.elementsEqual(end) }), first < last
        else { throw .malformed("it is not an OpenSSH private key file (no BEGIN OPENSSH PRIVATE KEY)") }
        let body = String(decoding: lines[(first + 1)..<last].joined(), as: UTF8.self)
        guard let decoded = SSHWire.decodeBase64(body) else { throw .malformed("the private key is not base64") }
        let magic = Array("openssh-key-v1\0".utf8)
        guard decoded.starts(with: magic) else { throw .malformed("the private key has no openssh-key-v1 magic") }
        var reader = SSHWireReader(Array(decoded[magic.count...]), "the private key file")
        cipher = try reader.text()
        kdf = try reader.text()
        kdfOptions = try reader.string()
        let count = try reader.uint32()
        guard count == 1 else { throw .unsupported("a private key file of \(count) keys (one only)") }
        publicKey = try reader.string()
        privateSection = try reader.string()
        tag = Array(reader.bytes)
    }
}
