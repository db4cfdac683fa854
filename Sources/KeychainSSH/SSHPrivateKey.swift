import Crypto
import FoundationEssentials
import KeychainSystem

/// A private key we sign with: ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa (2048 bits
/// or more), from an OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`, PROTOCOL.key)
/// unencrypted or passphrase-protected (bcrypt KDF; aes128/192/256-ctr, aes256-gcm@openssh.com),
/// an unencrypted PEM key, or what ssh-add sends an agent. It signs as `ssh-keygen -Y sign` and
/// OpenSSH's ssh-agent do with that key.
package struct SSHPrivateKey: SSHSigner {
    package let publicKey: SSHPublicKey
    /// The key's comment: the OpenSSH file's or the one ssh-add sent; "" for a PEM key.
    package let comment: String
    let material: SSHKeyMaterial

    /// Whether `file` is a private key file whose key is passphrase-protected; an encrypted PEM
    /// key, which we cannot open, is `.unsupported` (before any passphrase is asked).
    package static func isEncrypted(_ file: [UInt8]) throws(SSHKeyError) -> Bool {
        if SSHPEMKey.label(file) != nil, !isOpenSSHFile(file) {
            guard try !SSHPEMKey.isEncrypted(file) else { throw SSHPEMKey.encrypted }
            return false
        }
        return try OpenSSHKeyFile(file).cipher != "none"
    }

    /// Whether `bytes` look like a private key file we read: their first line that is not blank
    /// is the BEGIN line of an OpenSSH key or a PEM key (an encrypted PEM key too, so that it is
    /// refused with how to convert it rather than passed over). Cheap: nothing is decoded.
    package static func looksLikePrivateKey(_ bytes: [UInt8]) -> Bool {
        guard let start = bytes.firstIndex(where: { $0 > 0x20 }) else { return false }
        let line = bytes[start...].prefix { $0 != 0x0a && $0 != 0x0d }
        let trimmed = line.prefix(through: line.lastIndex(where: { $0 > 0x20 }) ?? line.startIndex)
        return (["OPENSSH PRIVATE KEY"] + SSHPEMKey.labels).contains {
            trimmed.elementsEqual("-----BEGIN \($0)-----".utf8)
        }
    }

    private static func isOpenSSHFile(_ file: [UInt8]) -> Bool {
        file.split(whereSeparator: { $0 == 0x0a || $0 == 0x0d }).contains {
            $0.filter { $0 > 0x20 }.elementsEqual("-----BEGINOPENSSHPRIVATEKEY-----".utf8)
        }
    }

    /// The key of `file`; `passphrase` is called only for an encrypted OpenSSH key, and what it
    /// returns is wiped once the key is derived.
    package init(file: [UInt8], passphrase: () throws(SSHKeyError) -> [UInt8]) throws(SSHKeyError) {
        if SSHPEMKey.label(file) != nil, !Self.isOpenSSHFile(file) {
            let material = try SSHPEMKey.material(file)
            try self.init(material: material, publicKey: SSHPublicKey(wire: material.publicKeyWire()), comment: "")
            return
        }
        let container = try OpenSSHKeyFile(file)
        defer { container.wipeSection() }
        let section: [UInt8]
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
        // Wiped in place: the reader below shares it, and an unencrypted key's is the container's.
        defer { wipeShared(section) }
        let blockSize = container.cipher == "none" ? 8 : 16
        var reader = SSHWireReader(section, "the private key section")
        guard try reader.uint32() == reader.uint32() else { throw .wrongPassphrase }
        let material = try SSHKeyMaterial.read(&reader)
        let comment = String(decoding: try reader.string(), as: UTF8.self)
        let padding = Array(reader.bytes)
        guard section.count % blockSize == 0, padding.count < blockSize,
            padding.enumerated().allSatisfy({ $0.element == UInt8($0.offset + 1) })
        else { throw .malformed("the private key section's padding is wrong") }
        let publicKey = try SSHPublicKey(wire: container.publicKey)
        guard publicKey.wire == (try material.publicKeyWire()) else {
            throw .malformed("the private key does not belong to the file's public key")
        }
        try self.init(material: material, publicKey: publicKey, comment: comment)
    }

    /// The key as ssh-add sends it in SSH_AGENTC_ADD_IDENTITY (17) or ADD_ID_CONSTRAINED (25),
    /// read after the message type: `string type`, the type's private fields, `string comment`
    /// (PROTOCOL.agent, draft-miller-ssh-agent section 4.2.3). Exactly those are consumed: the
    /// constraints that may follow are the caller's to read. Certificates and security keys
    /// (sk-*) are `.unsupported`.
    package init(agentFields reader: inout SSHWireReader) throws(SSHKeyError) {
        let material = try SSHKeyMaterial.read(&reader)
        let comment = String(decoding: try reader.string(), as: UTF8.self)
        try self.init(material: material, publicKey: SSHPublicKey(wire: material.publicKeyWire()), comment: comment)
    }

    /// Checks that the key signs what its public key verifies before anything else is signed:
    /// fields that passed every other check but still do not make one key are refused here.
    private init(material: SSHKeyMaterial, publicKey: SSHPublicKey, comment: String) throws(SSHKeyError) {
        let probe = Array("keychain-cli checks a private key against its public key".utf8)
        let signature = try material.sign(probe, flags: SSHPrivateKey.rsaSHA256)
        guard try SSHVerification.isValid(signature, of: probe, by: publicKey) else {
            throw .malformed("the \(publicKey.type) private key does not sign for its public key")
        }
        self.material = material
        self.publicKey = publicKey
        self.comment = comment
    }

    /// SSH_AGENT_RSA_SHA2_256: an ssh-rsa key signs with rsa-sha2-256.
    package static let rsaSHA256: UInt32 = 2
    /// SSH_AGENT_RSA_SHA2_512: an ssh-rsa key signs with rsa-sha2-512.
    package static let rsaSHA512: UInt32 = 4

    /// An SSH signature blob (string algorithm, string signature) over `data`, as OpenSSH's agent
    /// answers SSH_AGENTC_SIGN_REQUEST with `flags`: an ssh-rsa key signs with rsa-sha2-256 for
    /// flag 2, else rsa-sha2-512 for flag 4, else "ssh-rsa" (SHA-1, which clients that ask for
    /// neither expect); other keys ignore the flags.
    package func sign(_ data: [UInt8], flags: UInt32) throws(SSHKeyError) -> [UInt8] {
        try material.sign(data, flags: flags)
    }

    /// An SSH signature blob over `data`; an ssh-rsa key signs with rsa-sha2-512 (SSHSIG refuses SHA-1).
    package func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        try material.sign(data, flags: Self.rsaSHA512)
    }
}
