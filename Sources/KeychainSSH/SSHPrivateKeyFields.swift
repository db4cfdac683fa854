import Crypto
import CryptoExtras
import FoundationEssentials
import KeychainSystem

/// The private half of an ssh-ed25519, ecdsa-sha2-nistp256/384/521 or ssh-rsa key, held by
/// swift-crypto, with the fields OpenSSH stores of it. One reader and one writer serve both
/// places those fields appear: an OpenSSH private key file's private section (PROTOCOL.key) and
/// ssh-add's SSH_AGENTC_ADD_IDENTITY (PROTOCOL.agent, draft-miller-ssh-agent section 4.2.3).
enum SSHKeyMaterial: Sendable {
    case ed25519(Curve25519.Signing.PrivateKey)
    case p256(P256.Signing.PrivateKey)
    case p384(P384.Signing.PrivateKey)
    case p521(P521.Signing.PrivateKey)
    case rsa(_RSA.Signing.PrivateKey)

    /// The smallest RSA modulus swift-crypto builds a signing key of (`init(n:e:d:p:q:)`).
    static let minimumRSABits = 2048
    /// The largest OpenSSH makes (and BoringSSL's limit).
    static let maximumRSABits = 16384

    /// Reads `string type` and that type's private fields: ed25519 `string A`, `string k||A`;
    /// ECDSA `string curve`, `string Q`, `mpint d`; RSA `mpint n, e, d, iqmp, p, q`. Stops right
    /// after them (a comment follows in both places). The fields must make one key: a public
    /// part that is not the private part's is `.malformed`, never a key that signs garbage.
    static func read(_ reader: inout SSHWireReader) throws(SSHKeyError) -> SSHKeyMaterial {
        let type = try reader.text()
        switch type {
        case "ssh-ed25519":
            let publicKey = try reader.string()
            var both = try reader.string()
            defer { wipe(&both) }
            guard publicKey.count == 32, both.count == 64, Array(both[32...]) == publicKey else {
                throw .malformed("the ed25519 private key's fields do not fit together")
            }
            var seed = Array(both[..<32])
            defer { wipe(&seed) }
            guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: seed),
                Array(key.publicKey.rawRepresentation) == publicKey
            else { throw .malformed("the ed25519 private key does not make its public key") }
            return .ed25519(key)
        case "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521":
            let curve = try reader.text()
            guard curve == type.dropFirst("ecdsa-sha2-".count) else {
                throw .malformed("the \(type) private key names the curve \(curve)")
            }
            let point = try reader.string()
            var scalar = try reader.positiveMPInt()
            defer { wipe(&scalar) }
            let material = try ecdsa(type, scalar: scalar)
            guard material.ecdsaPoint == point else {
                throw .malformed("the \(type) private key does not make its public key")
            }
            return material
        case "ssh-rsa":
            var numbers = [[UInt8]]()
            defer { for index in numbers.indices { wipe(&numbers[index]) } }
            for _ in 0..<6 { numbers.append(try reader.positiveMPInt()) }
            return try rsa(n: numbers[0], e: numbers[1], d: numbers[2], iqmp: numbers[3], p: numbers[4], q: numbers[5])
        default:
            if type.hasSuffix("-cert-v01@openssh.com") {
                throw .unsupported("\(type) certificates (plain keys only)")
            }
            if type.hasPrefix("sk-") { throw .unsupported("\(type) security keys (FIDO keys sign on the token)") }
            throw .unsupported("\(type) private keys (ed25519, ECDSA and RSA only)")
        }
    }

    /// The ECDSA key of `scalar` (big-endian, without leading zeros) on the curve of `type`.
    static func ecdsa(_ type: String, scalar: [UInt8]) throws(SSHKeyError) -> SSHKeyMaterial {
        let size = type.hasSuffix("256") ? 32 : type.hasSuffix("384") ? 48 : 66
        guard scalar.count <= size else { throw .malformed("the \(type) private key is too large") }
        var raw = [UInt8](repeating: 0, count: size - scalar.count) + scalar
        defer { wipe(&raw) }
        do {
            switch size {
            case 32: return .p256(try P256.Signing.PrivateKey(rawRepresentation: raw))
            case 48: return .p384(try P384.Signing.PrivateKey(rawRepresentation: raw))
            default: return .p521(try P521.Signing.PrivateKey(rawRepresentation: raw))
            }
        } catch { throw .malformed("the \(type) private key is not a valid scalar") }
    }

    /// The RSA key of its numbers (magnitudes without leading zeros): swift-crypto checks that
    /// p·q = n and that d fits e (BoringSSL's RSA_check_key); `iqmp` must be q⁻¹ mod p as it
    /// computes it, since what we write of the key is what OpenSSH then signs with.
    static func rsa(n: [UInt8], e: [UInt8], d: [UInt8], iqmp: [UInt8], p: [UInt8], q: [UInt8])
        throws(SSHKeyError) -> SSHKeyMaterial
    {
        let bits = n.first.map { (n.count - 1) * 8 + 8 - $0.leadingZeroBitCount } ?? 0
        guard bits >= minimumRSABits else {
            throw .unsupported(
                "an ssh-rsa key of \(bits) bits (swift-crypto signs with \(minimumRSABits) bits or more)")
        }
        guard bits <= maximumRSABits else {
            throw .unsupported("an ssh-rsa key of \(bits) bits (\(maximumRSABits) at most)")
        }
        let key: _RSA.Signing.PrivateKey
        do { key = try _RSA.Signing.PrivateKey(n: n, e: e, d: d, p: p, q: q) } catch {
            throw .malformed("the ssh-rsa private key's numbers do not make a key (n is not p·q, or d is wrong)")
        }
        var numbers = try RSANumbers(pkcs1: key)
        defer { numbers.erase() }
        guard numbers.n == n, numbers.e == e, numbers.iqmp == iqmp else {
            throw .malformed("the ssh-rsa private key's iqmp is not q⁻¹ mod p")
        }
        return .rsa(key)
    }

    /// The key type, as OpenSSH names it.
    var type: String {
        switch self {
        case .ed25519: "ssh-ed25519"
        case .p256: "ecdsa-sha2-nistp256"
        case .p384: "ecdsa-sha2-nistp384"
        case .p521: "ecdsa-sha2-nistp521"
        case .rsa: "ssh-rsa"
        }
    }

    /// An ECDSA key's public point, uncompressed (empty for other keys).
    var ecdsaPoint: [UInt8] {
        switch self {
        case .p256(let key): Array(key.publicKey.x963Representation)
        case .p384(let key): Array(key.publicKey.x963Representation)
        case .p521(let key): Array(key.publicKey.x963Representation)
        case .ed25519, .rsa: []
        }
    }

    /// The public key's wire blob, derived from the private key.
    func publicKeyWire() throws(SSHKeyError) -> [UInt8] {
        switch self {
        case .ed25519(let key):
            return SSHWire.string(type) + SSHWire.string(Array(key.publicKey.rawRepresentation))
        case .p256, .p384, .p521:
            return SSHWire.string(type) + SSHWire.string(String(type.dropFirst("ecdsa-sha2-".count)))
                + SSHWire.string(ecdsaPoint)
        case .rsa(let key):
            var numbers = try RSANumbers(pkcs1: key)
            defer { numbers.erase() }
            return SSHWire.string(type) + SSHWire.mpint(numbers.e) + SSHWire.mpint(numbers.n)
        }
    }

    /// What `read` reads: `string type` and the private fields, appended to `fields` (which
    /// should have the capacity: they are secret, and the caller wipes them).
    func appendPrivateFields(to fields: inout [UInt8]) throws(SSHKeyError) {
        SSHWire.append(string: Array(type.utf8), to: &fields)
        switch self {
        case .ed25519(let key):
            let publicKey = Array(key.publicKey.rawRepresentation)
            // A copy of our own to wipe: the Data swift-crypto returns can share the key's storage.
            var seed = Array(key.rawRepresentation)
            defer { wipe(&seed) }
            SSHWire.append(string: publicKey, to: &fields)
            fields += SSHWire.uint32(64)
            fields += seed
            fields += publicKey
        case .p256(let key): appendECDSA(Array(key.rawRepresentation), to: &fields)
        case .p384(let key): appendECDSA(Array(key.rawRepresentation), to: &fields)
        case .p521(let key): appendECDSA(Array(key.rawRepresentation), to: &fields)
        case .rsa(let key):
            var numbers = try RSANumbers(pkcs1: key)
            defer { numbers.erase() }
            for number in [numbers.n, numbers.e, numbers.d, numbers.iqmp, numbers.p, numbers.q] {
                SSHWire.append(mpint: number, to: &fields)
            }
        }
    }

    /// The private fields on their own (tests compare keys with them). Secret.
    func privateFields() throws(SSHKeyError) -> [UInt8] {
        var fields: [UInt8] = []
        fields.reserveCapacity(8 * 1024)
        try appendPrivateFields(to: &fields)
        return fields
    }

    private func appendECDSA(_ scalar: [UInt8], to fields: inout [UInt8]) {
        var scalar = scalar
        defer { wipe(&scalar) }
        SSHWire.append(string: Array(type.dropFirst("ecdsa-sha2-".count).utf8), to: &fields)
        SSHWire.append(string: ecdsaPoint, to: &fields)
        SSHWire.append(mpint: scalar, to: &fields)
    }

    /// An SSH signature blob over `data`: ed25519; ECDSA as RFC 5656 (mpint r, mpint s; the
    /// curve's hash); RSA as OpenSSH's agent picks by `flags`: SSH_AGENT_RSA_SHA2_256 (2)
    /// rsa-sha2-256, else SSH_AGENT_RSA_SHA2_512 (4) rsa-sha2-512, else "ssh-rsa" (SHA-1).
    func sign(_ data: [UInt8], flags: UInt32) throws(SSHKeyError) -> [UInt8] {
        do {
            switch self {
            case .ed25519(let key):
                return SSHWire.string(type) + SSHWire.string(Array(try key.signature(for: data)))
            case .p256(let key): return ecdsaBlob(try key.signature(for: data).rawRepresentation)
            case .p384(let key): return ecdsaBlob(try key.signature(for: data).rawRepresentation)
            case .p521(let key): return ecdsaBlob(try key.signature(for: data).rawRepresentation)
            case .rsa(let key):
                let (algorithm, signature): (String, _RSA.Signing.RSASignature)
                if flags & SSHPrivateKey.rsaSHA256 != 0 {
                    algorithm = "rsa-sha2-256"
                    signature = try key.signature(for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
                } else if flags & SSHPrivateKey.rsaSHA512 != 0 {
                    algorithm = "rsa-sha2-512"
                    signature = try key.signature(for: SHA512.hash(data: data), padding: .insecurePKCS1v1_5)
                } else {
                    algorithm = "ssh-rsa"
                    signature = try key.signature(for: Insecure.SHA1.hash(data: data), padding: .insecurePKCS1v1_5)
                }
                return SSHWire.string(algorithm) + SSHWire.string(Array(signature.rawRepresentation))
            }
        } catch { throw .malformed("\(type) signing failed") }
    }

    /// r and s, each half of swift-crypto's raw signature, as RFC 5656's blob.
    private func ecdsaBlob(_ raw: Data) -> [UInt8] {
        let half = raw.count / 2
        return SSHWire.string(type) + SSHWire.string(SSHWire.mpint(raw.prefix(half)) + SSHWire.mpint(raw.suffix(half)))
    }
}
