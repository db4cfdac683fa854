import Crypto
import CryptoExtras
import FoundationEssentials
import KeychainSystem

/// Opens the private section of a passphrase-protected OpenSSH key (PROTOCOL.key): the key and
/// IV from bcrypt_pbkdf over the passphrase, then AES in CTR mode (ssh-keygen's default is
/// aes256-ctr) or aes256-gcm@openssh.com (its tag after the section).
enum SSHKeyDecryption {
    /// The most bcrypt rounds a file may ask for: ssh-keygen's default is 16, and each round
    /// costs about 10 ms, so a file asking for more is refused rather than hanging us for hours.
    static let maximumRounds: UInt32 = 10_000

    static func decrypt(_ file: OpenSSHKeyFile, passphrase: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        let (keyLength, ivLength, tagLength): (Int, Int, Int)
        switch file.cipher {
        case "aes128-ctr": (keyLength, ivLength, tagLength) = (16, 16, 0)
        case "aes192-ctr": (keyLength, ivLength, tagLength) = (24, 16, 0)
        case "aes256-ctr": (keyLength, ivLength, tagLength) = (32, 16, 0)
        case "aes256-gcm@openssh.com": (keyLength, ivLength, tagLength) = (32, 12, 16)
        default: throw .unsupported("the private key cipher \(file.cipher)")
        }
        guard file.kdf == "bcrypt" else { throw .unsupported("the private key KDF \(file.kdf)") }
        var options = SSHWireReader(file.kdfOptions, "the private key's bcrypt options")
        let salt = try options.string()
        let rounds = try options.uint32()
        try options.end()
        guard rounds >= 1, rounds <= maximumRounds else {
            throw .unsupported("\(rounds) bcrypt rounds (at most \(maximumRounds))")
        }
        guard !salt.isEmpty, salt.count <= 1024 else {
            throw .malformed("the private key's bcrypt salt is empty or long")
        }
        guard file.tag.count == tagLength else { throw .malformed("the private key has trailing data") }
        guard file.privateSection.count % 16 == 0, !file.privateSection.isEmpty else {
            throw .malformed("the encrypted private section is not whole AES blocks")
        }
        var derived = BcryptPBKDF.derive(
            passphrase: passphrase, salt: salt, rounds: Int(rounds), count: keyLength + ivLength)
        defer { wipe(&derived) }
        let key = SymmetricKey(data: derived[..<keyLength])
        let iv = Array(derived[keyLength...])
        var plain: Data
        do {
            if tagLength == 0 {
                plain = try AES._CTR.decrypt(file.privateSection, using: key, nonce: AES._CTR.Nonce(nonceBytes: iv))
            } else {
                let box = try AES.GCM.SealedBox(
                    nonce: AES.GCM.Nonce(data: iv), ciphertext: file.privateSection, tag: file.tag)
                do { plain = try AES.GCM.open(box, using: key) } catch { throw SSHKeyError.wrongPassphrase }
            }
        } catch let error as SSHKeyError {
            throw error
        } catch {
            throw .malformed("the private key could not be decrypted")
        }
        defer { wipe(&plain) }
        return Array(plain)
    }
}
