import Crypto
import Testing

@testable import KeychainAge
@testable import KeychainCore

/// The field arithmetic behind ssh-ed25519 recipients, checked against swift-crypto: the
/// Montgomery form of an Ed25519 public key must be the X25519 public key of the same seed.
@Suite("Curve25519 field: Ed25519 to X25519 public keys")
struct Curve25519FieldTests {
    @Test func theConversionAgreesWithSwiftCryptoForRandomKeys() throws {
        for _ in 0..<32 {
            let signing = Curve25519.Signing.PrivateKey()
            let seed = Array(signing.rawRepresentation)
            let x25519 = try Curve25519.KeyAgreement.PrivateKey(
                rawRepresentation: Array(SHA512.hash(data: seed).prefix(32)))
            let converted = Ed25519.montgomeryU(ofPublicKey: Array(signing.publicKey.rawRepresentation))
            #expect(converted == Array(x25519.publicKey.rawRepresentation))
        }
    }

    @Test func inversesMultiplyToOneAndEncodingsAreCanonical() {
        for value: Int64 in [1, 2, 19, 121_666, 65_535, 65_536] {
            let element = FieldElement(value)
            #expect((element * element.inverse).bytes == FieldElement(1).bytes, "\(value)")
        }
        // p itself (2^255 - 19) encodes as zero, p + 1 as one.
        let p = [0xed] + Array(repeating: UInt8(0xff), count: 30) + [0x7f]
        #expect(FieldElement(littleEndian: p).bytes == Array(repeating: 0, count: 32))
        #expect(FieldElement(littleEndian: [0xee] + p.dropFirst()).bytes == FieldElement(1).bytes)
    }

    /// About half of all y are not on the curve (x^2 would not be a square): those are refused,
    /// as age refuses them; the identity point (y = 1) has no Montgomery form.
    @Test func pointsOffTheCurveAreRefused() {
        let results = (2..<42).map { y in Ed25519.montgomeryU(ofPublicKey: [UInt8(y)] + Array(repeating: 0, count: 31))
        }
        #expect(results.filter { $0 == nil }.count >= 5 && results.filter { $0 != nil }.count >= 5)
        #expect(Ed25519.montgomeryU(ofPublicKey: [1] + Array(repeating: 0, count: 31)) == nil)
    }
}
