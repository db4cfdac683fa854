import FoundationEssentials
import KeychainSystem

extension SSHPrivateKey {
    /// The key as an unencrypted OpenSSH private key file (`-----BEGIN OPENSSH PRIVATE KEY-----`,
    /// PROTOCOL.key: random check integers, the private fields, the comment, padding 1, 2, 3, …;
    /// base64 in lines of 70 columns), as `ssh-keygen -N ""` writes one and reads back: how the
    /// agent stores a key ssh-add gave it. Secret: the caller wipes it.
    package func openSSHFile() -> [UInt8] {
        // Built in place with room for everything, so that no copy of the secret is left unwiped.
        var section: [UInt8] = []
        section.reserveCapacity(8 * 1024 + comment.utf8.count + publicKey.wire.count)
        let check = UInt32.random(in: .min ... .max)
        section += SSHWire.uint32(check) + SSHWire.uint32(check)
        // The fields were read or made from this very key already: writing them cannot fail.
        try? material.appendPrivateFields(to: &section)
        SSHWire.append(string: Array(comment.utf8), to: &section)
        var padding: UInt8 = 1
        while section.count % 8 != 0 {
            section.append(padding)
            padding += 1
        }
        var blob = Array("openssh-key-v1\0".utf8)
        blob.reserveCapacity(blob.count + 64 + publicKey.wire.count + section.count)
        blob += SSHWire.string("none") + SSHWire.string("none") + SSHWire.string("") + SSHWire.uint32(1)
        SSHWire.append(string: publicKey.wire, to: &blob)
        SSHWire.append(string: section, to: &blob)
        defer {
            wipe(&section)
            wipe(&blob)
        }
        return SSHWire.armor(blob, label: "OPENSSH PRIVATE KEY")
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
