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
        // Every copy of the key made here (its lines, their base64, the decoded file) is wiped
        // before it is freed; the private section is the caller's to wipe (``wipeSection()``).
        var lines = file.split(whereSeparator: { $0 == 0x0a || $0 == 0x0d }).map { $0.filter { $0 > 0x20 } }
        defer { for index in lines.indices { KeychainSystem.wipe(&lines[index]) } }
        let begin = Array("-----BEGINOPENSSHPRIVATEKEY-----".utf8)
        let end = Array("-----ENDOPENSSHPRIVATEKEY-----".utf8)
        guard let first = lines.firstIndex(where: { $0.elementsEqual(begin) }) else {
            throw .malformed("it is not an OpenSSH private key file (no BEGIN OPENSSH PRIVATE KEY)")
        }
        guard let last = lines.lastIndex(where: { $0.elementsEqual(end) }), first < last else {
            throw .malformed("the key is cut short (no END OPENSSH PRIVATE KEY line after its BEGIN line)")
        }
        var body: [UInt8] = []
        body.reserveCapacity(lines[(first + 1)..<last].reduce(0) { $0 + $1.count })
        for line in lines[(first + 1)..<last] { body += line }
        defer { KeychainSystem.wipe(&body) }
        guard let decoded = SSHWire.decodeBase64(bytes: body) else { throw .malformed("the private key is not base64") }
        defer { wipeShared(decoded) }
        let magic = Array("openssh-key-v1\0".utf8)
        guard decoded.starts(with: magic) else { throw .malformed("the private key has no openssh-key-v1 magic") }
        var reader = SSHWireReader(decoded, "the private key file")
        _ = try reader.raw(magic.count)
        cipher = try reader.text()
        kdf = try reader.text()
        kdfOptions = try reader.string()
        let count = try reader.uint32()
        guard count == 1 else { throw .unsupported("a private key file of \(count) keys (one only)") }
        publicKey = try reader.string()
        privateSection = try reader.string()
        tag = Array(reader.bytes)
        reader.bytes = []  // (its slice of `decoded` goes before `decoded` is wiped)
    }

    /// Overwrites the private section (the only secret field), whichever copy of this value
    /// holds it: its storage is shared, not copied, by the copies of a struct.
    func wipeSection() { wipeShared(privateSection) }
}
