import Crypto
import FoundationEssentials

/// OpenSSH's SSHSIG signature (PROTOCOL.sshsig): a signature over a message's hash, bound to a
/// namespace, armoured as `ssh-keygen -Y sign` writes it (`-----BEGIN SSH SIGNATURE-----`, base64
/// wrapped at 70 columns, `-----END SSH SIGNATURE-----`, a trailing newline).
package struct SSHSignature: Sendable, Equatable {
    package let publicKey: SSHPublicKey
    package let namespace: String
    /// "sha512" (what we make) or "sha256".
    package let hashAlgorithm: String
    /// The inner SSH signature blob (string algorithm, string signature).
    package let signature: [UInt8]
    /// The reserved field, kept as given (empty in every signature OpenSSH makes).
    let reserved: [UInt8]

    static let magic = Array("SSHSIG".utf8)
    static let begin = "-----BEGIN SSH SIGNATURE-----"
    static let end = "-----END SSH SIGNATURE-----"
    /// The largest armoured signature read: an RSA key of 16384 bits makes about 6 KiB.
    static let maximumArmoredSize = 64 * 1024

    init(
        publicKey: SSHPublicKey, namespace: String, hashAlgorithm: String, signature: [UInt8], reserved: [UInt8] = []
    ) {
        self.publicKey = publicKey
        self.namespace = namespace
        self.hashAlgorithm = hashAlgorithm
        self.signature = signature
        self.reserved = reserved
    }

    /// `message` signed by `signer` under `namespace` (SHA-512 of the message, as ssh-keygen).
    package static func sign(_ message: [UInt8], namespace: String, with signer: any SSHSigner) throws(SSHKeyError)
        -> SSHSignature
    {
        guard !namespace.isEmpty else { throw .malformed("a signature's namespace is empty") }
        let signed = try signedData(message, namespace: namespace, reserved: [], hashAlgorithm: "sha512")
        return SSHSignature(
            publicKey: signer.publicKey, namespace: namespace, hashAlgorithm: "sha512",
            signature: try signer.sign(signed))
    }

    /// What the inner signature is made over: the magic, namespace, reserved field, hash
    /// algorithm and the message's hash.
    static func signedData(_ message: [UInt8], namespace: String, reserved: [UInt8], hashAlgorithm: String)
        throws(SSHKeyError) -> [UInt8]
    {
        let hash: [UInt8]
        switch hashAlgorithm {
        case "sha512": hash = Array(SHA512.hash(data: message))
        case "sha256": hash = Array(SHA256.hash(data: message))
        default: throw .unsupported("the signature hash algorithm \(hashAlgorithm)")
        }
        return magic + SSHWire.string(namespace) + SSHWire.string(reserved) + SSHWire.string(hashAlgorithm)
            + SSHWire.string(hash)
    }

    /// The signature of an armoured file; strict: nothing before or after the armour but
    /// whitespace, version 1, known hash algorithms, no trailing bytes, at most 64 KiB.
    package init(armored: [UInt8]) throws(SSHKeyError) {
        guard armored.count <= Self.maximumArmoredSize else { throw .malformed("the signature is over 64 KiB") }
        // On bytes, not Characters: a listing of 10,000 signed items parses 10,000 of these.
        let isBlank = { (byte: UInt8) in byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0B || byte == 0x0C }
        var lines: [ArraySlice<UInt8>] = []
        for line in armored.split(separator: 0x0A) {
            guard let first = line.firstIndex(where: { !isBlank($0) }),
                let last = line.lastIndex(where: { !isBlank($0) })
            else { continue }
            lines.append(line[first...last])
        }
        guard lines.count >= 3, lines.first!.elementsEqual(Self.begin.utf8), lines.last!.elementsEqual(Self.end.utf8)
        else {
            throw .malformed(
                "the signature is not armoured as -----BEGIN SSH SIGNATURE----- … -----END SSH SIGNATURE-----")
        }
        let body = lines[1..<(lines.count - 1)].flatMap { $0 }
        guard body.allSatisfy({ $0 < 0x80 }), let blob = SSHWire.decodeBase64(String(decoding: body, as: UTF8.self))
        else { throw .malformed("the signature is not base64") }
        try self.init(blob: blob)
    }

    /// The signature of a decoded SSHSIG blob.
    init(blob: [UInt8]) throws(SSHKeyError) {
        var reader = SSHWireReader(blob, "the signature")
        guard try reader.raw(Self.magic.count) == Self.magic else {
            throw .malformed("the signature has no SSHSIG magic")
        }
        let version = try reader.uint32()
        guard version == 1 else { throw .malformed("the signature is of version \(version), not 1") }
        let publicKey = try SSHPublicKey(wire: reader.string())
        let namespace = try reader.text()
        let reserved = try reader.string()
        let hashAlgorithm = try reader.text()
        let signature = try reader.string()
        try reader.end()
        guard !namespace.isEmpty else { throw .malformed("the signature's namespace is empty") }
        guard hashAlgorithm == "sha512" || hashAlgorithm == "sha256" else {
            throw .malformed("the signature's hash algorithm \"\(hashAlgorithm)\" is neither sha256 nor sha512")
        }
        self.init(
            publicKey: publicKey, namespace: namespace, hashAlgorithm: hashAlgorithm, signature: signature,
            reserved: reserved)
    }

    /// The SSHSIG blob.
    var blob: [UInt8] {
        Self.magic + SSHWire.uint32(1) + SSHWire.string(publicKey.wire) + SSHWire.string(namespace)
            + SSHWire.string(reserved) + SSHWire.string(hashAlgorithm) + SSHWire.string(signature)
    }

    /// The armoured form, as `ssh-keygen -Y sign` writes it.
    package var armored: String {
        var base64 = Substring(SSHWire.base64(blob))
        var lines = [Self.begin]
        while !base64.isEmpty {
            lines.append(String(base64.prefix(70)))
            base64 = base64.dropFirst(70)
        }
        lines.append(Self.end)
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whether this is a valid signature of `message` under `namespace` by `publicKey`: false for
    /// another namespace or message, or a signature that does not verify; `.unsupported` for a
    /// key type we cannot verify (ed25519, ECDSA P-256/384/521 and RSA with SHA-2 we can).
    package func verify(_ message: [UInt8], namespace: String) throws(SSHKeyError) -> Bool {
        let signed = try Self.signedData(
            message, namespace: self.namespace, reserved: reserved, hashAlgorithm: hashAlgorithm)
        let valid = try SSHVerification.isValid(signature, of: signed, by: publicKey)
        return valid && namespace == self.namespace
    }
}
