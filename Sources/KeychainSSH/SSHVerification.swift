import Crypto
import CryptoExtras
import FoundationEssentials

/// Checks an SSH signature blob (string algorithm, string signature) against a public key:
/// ssh-ed25519, ecdsa-sha2-nistp256/384/521 (RFC 5656) and rsa-sha2-256/512 over ssh-rsa keys
/// (RFC 8332; the SHA-1 "ssh-rsa" signature is refused, as SSHSIG requires).
enum SSHVerification {
    static func isValid(_ blob: [UInt8], of data: [UInt8], by key: SSHPublicKey) throws(SSHKeyError) -> Bool {
        var reader = SSHWireReader(blob, "the inner signature")
        let algorithm = try reader.text()
        let signature = try reader.string()
        try reader.end()
        var fields = SSHWireReader(key.wire, "the public key")
        _ = try fields.string()
        switch (key.type, algorithm) {
        case ("ssh-ed25519", "ssh-ed25519"):
            guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: fields.string()) else {
                throw .malformed("the ed25519 public key is not a valid point")
            }
            return signature.count == 64 && publicKey.isValidSignature(signature, for: data)
        case ("ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256"), ("ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384"),
            ("ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521"):
            _ = try fields.string()
            return try ecdsa(key.type, point: fields.string(), signature: signature, data: data)
        case ("ssh-rsa", "rsa-sha2-256"), ("ssh-rsa", "rsa-sha2-512"):
            let exponent = try fields.positiveMPInt()
            let modulus = try fields.positiveMPInt()
            let publicKey: _RSA.Signing.PublicKey
            do { publicKey = try _RSA.Signing.PublicKey(n: modulus, e: exponent) } catch {
                throw .unsupported("an ssh-rsa key of \(modulus.count * 8) bits (2048 or more)")
            }
            guard signature.count == modulus.count else { return false }
            let rsa = _RSA.Signing.RSASignature(rawRepresentation: signature)
            return algorithm == "rsa-sha2-256"
                ? publicKey.isValidSignature(rsa, for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                : publicKey.isValidSignature(rsa, for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
        case ("ssh-ed25519", _), ("ecdsa-sha2-nistp256", _), ("ecdsa-sha2-nistp384", _), ("ecdsa-sha2-nistp521", _),
            ("ssh-rsa", _):
            return false  // a signature of another algorithm than the key's
        default:
            throw .unsupported("signatures by \(key.type) keys")
        }
    }

    /// An ECDSA signature (mpint r, mpint s) by the uncompressed `point` on the curve of `type`,
    /// over `data` hashed as RFC 5656 says (SHA-256, SHA-384, SHA-512).
    private static func ecdsa(_ type: String, point: [UInt8], signature: [UInt8], data: [UInt8])
        throws(SSHKeyError) -> Bool
    {
        var reader = SSHWireReader(signature, "the ECDSA signature")
        let r = try reader.positiveMPInt()
        let s = try reader.positiveMPInt()
        try reader.end()
        let size = type.hasSuffix("256") ? 32 : type.hasSuffix("384") ? 48 : 66
        guard r.count <= size, s.count <= size else { return false }
        let raw = [UInt8](repeating: 0, count: size - r.count) + r + [UInt8](repeating: 0, count: size - s.count) + s
        do {
            switch size {
            case 32:
                let key = try P256.Signing.PublicKey(x963Representation: point)
                return key.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: raw), for: data)
            case 48:
                let key = try P384.Signing.PublicKey(x963Representation: point)
                return key.isValidSignature(try P384.Signing.ECDSASignature(rawRepresentation: raw), for: data)
            default:
                let key = try P521.Signing.PublicKey(x963Representation: point)
                return key.isValidSignature(try P521.Signing.ECDSASignature(rawRepresentation: raw), for: data)
            }
        } catch {
            throw .malformed("the \(type) public key is not a point on its curve")
        }
    }
}
