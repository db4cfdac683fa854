import Crypto
import CryptoExtras
import Synchronization

// age's scrypt recipient type (https://age-encryption.org/v1, "The scrypt recipient type"): a
// file key wrapped under scrypt(passphrase), in a stanza that must be the file's only one.
extension AgeFile {
    /// A new header: a random file key wrapped under scrypt(`passphrase`) with a random salt.
    package static func makeHeader(passphrase: [UInt8], workFactor: Int) throws -> Header {
        precondition(workFactors.contains(workFactor))
        let fileKey = SymmetricKey(size: .bits128)
        let salt = randomBytes(16)
        let wrapKey = try deriveWrapKey(passphrase: passphrase, salt: salt, workFactor: workFactor)
        let stanza = Stanza(
            arguments: ["scrypt", base64(salt), String(workFactor)], body: try wrap(fileKey.bytes, with: wrapKey))
        return makeHeader(fileKey: fileKey, stanzas: [stanza])
    }

    /// The file key in the scrypt `stanza`, under scrypt(`passphrase()`).
    static func unwrapScrypt(_ stanza: Stanza, passphrase: () throws -> [UInt8]) throws -> [UInt8] {
        let arguments = stanza.arguments
        guard arguments.count == 3, let salt = decodeBase64(arguments[1]), salt.count == 16,
            let workFactor = Int(arguments[2]), String(workFactor) == arguments[2], stanza.body.count == 32
        else { throw Failure.malformed("its scrypt recipient is malformed") }
        guard workFactors.contains(workFactor) else {
            throw Failure.malformed(
                "its scrypt work factor 2^\(workFactor) is outside the accepted 2^\(workFactors.lowerBound)"
                    + "...2^\(workFactors.upperBound)")
        }
        let wrapKey = try deriveWrapKey(passphrase: passphrase(), salt: salt, workFactor: workFactor)
        guard let key = unwrap(stanza.body, with: wrapKey) else { throw Failure.wrongPassphrase }
        return key
    }

    /// Counts the scrypt runs of the task it is bound to: the tests hold a write to one.
    final class DerivationCounter: Sendable {
        let count = Atomic(0)
    }

    @TaskLocal static var derivationCounter: DerivationCounter?

    static func deriveWrapKey(passphrase: [UInt8], salt: [UInt8], workFactor: Int) throws -> SymmetricKey {
        derivationCounter?.count.add(1, ordering: .relaxed)
        return try KDF.Scrypt.deriveKey(
            from: passphrase, salt: Array("age-encryption.org/v1/scrypt".utf8) + salt, outputByteCount: 32,
            rounds: 1 << workFactor, blockSize: 8, parallelism: 1)
    }

}
