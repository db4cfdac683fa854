import CryptoExtras
import KeychainSystem

// The private parts of a key, for the code that decrypts with it (age's ssh recipient types):
// each handed to a closure that must not keep them, and wiped after.
extension SSHPrivateKey {
    /// An ed25519 key's 32-byte private seed, given to `body`; nil for a key of another type.
    package func withEd25519Seed<Result>(_ body: ([UInt8]) throws -> Result) rethrows -> Result? {
        guard case .ed25519(let key) = material else { return nil }
        // A copy of our own to wipe: the Data swift-crypto returns can share the key's storage.
        var seed = Array(key.rawRepresentation)
        defer { wipe(&seed) }
        return try body(seed)
    }

    /// An RSA key's modulus, public and private exponents (big-endian magnitudes), given to
    /// `body`; nil for a key of another type.
    package func withRSANumbers<Result>(_ body: (_ n: [UInt8], _ e: [UInt8], _ d: [UInt8]) -> Result)
        throws(SSHKeyError) -> Result?
    {
        guard case .rsa(let key) = material else { return nil }
        var numbers = try RSANumbers(pkcs1: key)
        defer { numbers.erase() }
        return body(numbers.n, numbers.e, numbers.d)
    }
}
