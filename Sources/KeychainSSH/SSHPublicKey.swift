import Crypto
import FoundationEssentials

/// An SSH public key in its wire form (RFC 4253 section 6.6, RFC 5656, OpenSSH's PROTOCOL.key):
/// what a `.pub` file's line, an allowed_signers entry, an SSHSIG signature and an ssh-agent name.
/// ed25519, ECDSA and RSA keys have their fields checked; another type is kept as given (it can
/// be listed and compared, not verified).
package struct SSHPublicKey: Hashable, Sendable {
    /// The key type: "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", …
    package let type: String
    /// The whole wire blob.
    package let wire: [UInt8]

    /// The key of a wire blob (string type, then the type's fields).
    package init(wire: [UInt8]) throws(SSHKeyError) {
        guard wire.count <= 16 * 1024 else { throw .malformed("the public key is over 16 KiB") }
        var reader = SSHWireReader(wire, "the public key")
        let type = try reader.text()
        guard !type.isEmpty, type.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw .malformed("the public key's type is not a name")
        }
        switch type {
        case "ssh-ed25519":
            guard try reader.string().count == 32 else { throw .malformed("the ed25519 public key is not 32 bytes") }
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
            guard try reader.text() == String(type.dropFirst("ecdsa-sha2-".count)) else {
                throw .malformed("the \(type) public key names another curve")
            }
            guard try reader.string().first == 4 else { throw .malformed("the \(type) point is not uncompressed") }
        case "ssh-rsa":
            let exponent = try reader.positiveMPInt()
            let modulus = try reader.positiveMPInt()
            guard !exponent.isEmpty, !modulus.isEmpty else { throw .malformed("the ssh-rsa public key is zero") }
        default:
            reader.bytes = []  // kept as given
        }
        try reader.end()
        self.type = type
        self.wire = wire
    }

    /// The key of a `.pub` file's line: "TYPE BASE64 [comment]".
    package init(line: String) throws(SSHKeyError) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0.isNewline })
        guard fields.count >= 2 else { throw .malformed("a public key line is \"TYPE BASE64 [comment]\"") }
        guard let wire = SSHWire.decodeBase64(fields[1]) else { throw .malformed("the public key is not base64") }
        try self.init(wire: wire)
        guard type == fields[0] else { throw .malformed("the line says \(fields[0]) but the key is \(type)") }
    }

    /// "TYPE BASE64", without a comment.
    package var line: String { "\(type) \(SSHWire.base64(wire))" }

    /// "SHA256:" and the unpadded base64 of SHA-256(wire), as `ssh-keygen -l` prints it.
    package var fingerprint: String {
        "SHA256:" + SSHWire.base64(Array(SHA256.hash(data: wire))).replacing("=", with: "")
    }
}

/// Something that signs with an SSH key: a private key of ours, or a key an ssh-agent holds.
package protocol SSHSigner: Sendable {
    var publicKey: SSHPublicKey { get }
    /// An SSH signature blob (string algorithm name, string signature bytes) over `data`.
    func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8]
}
