import Crypto
import CryptoExtras
import FoundationEssentials
import KeychainFormats

/// The cryptography of authenticator apps' encrypted backups: AES-256-GCM under a key derived
/// from the password, with bounds on the work a file may ask of the key derivation (a hostile
/// file must not hang the import or exhaust memory).
enum OTPCrypto {
    /// The most scrypt work an Aegis vault may ask, N·r·p: 8 times the 2^15·8·1 Aegis writes
    /// (docs/vault.md), which is at most 256 MiB of memory (128·N·r bytes) and a second or two.
    static let maximumScryptWork = 8 << 18

    /// The most PBKDF2 iterations an andOTP backup may ask: 8 times the most andOTP writes
    /// (140,000 to 160,000, Constants.PBKDF2_MAX_BACKUP_ITERATIONS).
    static let maximumPBKDF2Iterations = 8 * 160_000

    /// The plaintext of AES-256-GCM's `ciphertext` and `tag` under `key` and `nonce`; nil when
    /// the tag does not match (a wrong key, or bytes altered).
    static func open(_ ciphertext: some DataProtocol, tag: [UInt8], nonce: [UInt8], key: SymmetricKey) -> [UInt8]? {
        guard let nonce = try? AES.GCM.Nonce(data: nonce),
            let box = try? AES.GCM.SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag),
            let plaintext = try? AES.GCM.open(box, using: key)
        else { return nil }
        return Array(plaintext)
    }

    /// scrypt(`password`, `salt`) with Aegis's key length (32 bytes).
    /// - Throws: ``FormatError`` naming `location` when scrypt refuses the parameters.
    static func scrypt(_ password: [UInt8], salt: [UInt8], n: Int, r: Int, p: Int, location: String) throws
        -> SymmetricKey
    {
        do {
            return try KDF.Scrypt.deriveKey(
                from: password, salt: salt, outputByteCount: 32, rounds: n, blockSize: r, parallelism: p)
        } catch {
            throw FormatError("\(location): scrypt refuses its parameters n=\(n), r=\(r), p=\(p); nothing was stored")
        }
    }

    /// PBKDF2-HMAC-SHA1(`password`, `salt`, `iterations`), 32 bytes (andOTP's key).
    static func pbkdf2(_ password: [UInt8], salt: [UInt8], iterations: Int) -> SymmetricKey? {
        try? KDF.Insecure.PBKDF2.deriveKey(
            from: password, salt: salt, using: .insecureSHA1, outputByteCount: 32, unsafeUncheckedRounds: iterations)
    }
}
