import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainSecretSession

private func bytes(_ hex: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        result.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return result
}

/// Known answers computed outside Swift: Python's `pow` for the group arithmetic, HMAC-SHA256 for
/// HKDF, `openssl enc -aes-128-cbc` for the ciphertext. The exponents were chosen so that the
/// shared value starts with a zero byte, the case where an implementation that does not pad it
/// to 128 bytes derives a different key than libsecret and gnome-keyring.
private enum KnownAnswer {
    static let ourExponent = bytes("0e1debddd4c41b24540767fa772cfbbf62a6dd29d9b4f6d1d76137b256ddd5e2")
    static let ourPublicValue = bytes(
        "104d4b7123351a95e0a464404f309e6de65a6d36158714c9975a4ed6e496d96bc25b526ba84fe14da66583b86bc2f5b4"
            + "51baeeeb20e889445096137a00e291ef073d83907dd790b1736c972304cb7f02e3bea51fe3799b8e9a5ab669eaf3"
            + "167eeff32e018a342ac02f23a16b98a0d38ebf08f11f2171dacce552981cfd3f4731")
    static let servicePublicValue = bytes(
        "94a459f3d02a2d9614939b57fa761961409c959b93d9f8f445c38c71c3ca411b5c27dcee7ef3add6dbc4eda3e7d3a845"
            + "25ad05c5054115c82d65d91d12281ea933daae280a4bf6dc1913c9077ae0707f05ccdfb9fb41911dd95722ade39f"
            + "777ef0293a00f99b4f99a9d212ccd4168627c220ad93d491ac68c749100cdbc4bbee")
    static let key = bytes("331b01485fe564a57d80437dd29b1216")
    static let iv = Array(UInt8(0)..<16)
    static let ciphertext = bytes("cedfecc8a2fcdb968215bff2265339663c64192eeb021731ad3b0ff03710b717")
    static let plaintext = "gnome-keyring sent this"
}

@Suite("SecretSession: the Secret Service's dh-ietf1024-sha256-aes128-cbc-pkcs7 session")
struct SecretSessionTests {
    @Test func publicValueSharedKeyAndDecryptionMatchIndependentImplementations() throws {
        let exchange = SecretSession.KeyExchange(exponent: KnownAnswer.ourExponent)
        #expect(exchange.publicValue == KnownAnswer.ourPublicValue)
        let key = try #require(exchange.sharedKey(peer: KnownAnswer.servicePublicValue))
        #expect(key == KnownAnswer.key)
        let session = SecretSession(path: "/org/freedesktop/secrets/session/s1", key: key)
        let plaintext = try session.decrypt(parameters: KnownAnswer.iv, value: KnownAnswer.ciphertext)
        #expect(String(decoding: plaintext, as: UTF8.self) == KnownAnswer.plaintext)
    }

    /// The exponent and IV come eight bytes per `getrandom`: every length, none repeated.
    @Test(arguments: [1, 7, 8, 9, 16, 32, 127])
    func randomBytesHaveTheLengthAskedAndDiffer(count: Int) {
        let draws = (0..<4).map { _ in SecretSession.randomBytes(count) }
        #expect(draws.allSatisfy { $0.count == count })
        // Four equal draws of 7 bytes or more would be a 2^-168 accident; of one byte, 2^-24.
        #expect(Set(draws).count > 1)
    }

    @Test func bothSidesDeriveTheSameKeyWhateverTheirExponentLengths() throws {
        for _ in 0..<20 {
            // The service (gnome-keyring, libsecret) draws exponents as long as the prime.
            let service = SecretSession.KeyExchange(exponentBytes: SecretSession.prime.count - 1)
            let client = SecretSession.KeyExchange()
            #expect(client.exponent.count == 32)
            #expect(client.publicValue.first != 0 && client.publicValue.count <= 128)
            let ours = try #require(client.sharedKey(peer: service.publicValue))
            let theirs = try #require(service.sharedKey(peer: client.publicValue))
            #expect(ours == theirs)
            #expect(ours.count == 16)
        }
        // Fresh exponents every time.
        #expect(SecretSession.KeyExchange().exponent != SecretSession.KeyExchange().exponent)
    }

    @Test func publicValuesThatForceAKnownSharedValueAreRefused() {
        let exchange = SecretSession.KeyExchange()
        var primeMinusOne = SecretSession.prime
        primeMinusOne[primeMinusOne.count - 1] -= 1
        let twoToThe1024 = [1] + [UInt8](repeating: 0, count: 128)
        for peer in [
            [], [0], [1], [0, 0, 1], primeMinusOne, SecretSession.prime, twoToThe1024, [1] + SecretSession.prime,
        ] {
            #expect(exchange.sharedKey(peer: peer) == nil, "\(peer.count) bytes")
        }
        #expect(exchange.sharedKey(peer: [2]) != nil)
        var primeMinusTwo = primeMinusOne
        primeMinusTwo[primeMinusTwo.count - 1] -= 1
        #expect(exchange.sharedKey(peer: primeMinusTwo) != nil)
    }

    @Test func aSessionDerivesItsKeyWhenFirstNeededAndRefusesAnInvalidPublicValueThen() throws {
        // A pair whose shared value begins with a nonzero byte, with the key left to derive: as
        // openSession() returns a session.
        var service: SecretSession.KeyExchange
        var exchange: SecretSession.KeyExchange
        repeat {
            (service, exchange) = (SecretSession.KeyExchange(), SecretSession.KeyExchange())
        } while exchange.sharedValue(peer: service.publicValue)?.first == 0
        let pending = SecretSession(path: "/s", exchange: exchange, peer: service.publicValue)
        pending.deriveKey()
        #expect(try pending.key() == service.sharedKey(peer: exchange.paddedPublicValue))
        let sealed = try SecretSession(path: "/s", key: try #require(service.sharedKey(peer: exchange.publicValue)))
            .encrypt(Data(KnownAnswer.plaintext.utf8))
        let plaintext = try SecretSession(path: "/s", exchange: exchange, peer: service.publicValue)
            .decrypt(parameters: sealed.parameters, value: sealed.value)
        #expect(String(decoding: plaintext, as: UTF8.self) == KnownAnswer.plaintext)
        // A service answering 1 (shared value 1, known to anyone): nothing is encrypted or
        // decrypted under it, before or after deriveKey().
        let invalid = SecretSession(path: "/s", exchange: exchange, peer: [1])
        #expect(throws: KeychainError.self) { try invalid.encrypt(Data("secret".utf8)) }
        invalid.deriveKey()
        #expect(throws: KeychainError.self) { try invalid.key() }
        do {
            _ = try invalid.decrypt(parameters: KnownAnswer.iv, value: KnownAnswer.ciphertext)
            Issue.record("decrypted under an invalid public value")
        } catch {
            #expect("\(error)".contains("invalid public value"))
        }
    }

    /// The known answers' shared value begins with a zero byte: a provider session (serve)
    /// hashes all 128 bytes, as libsecret does, but a client session sends and reads nothing in
    /// it, since kwalletd5 derives another key then; the caller opens another session.
    @Test func aClientSessionWhoseSharedValueBeginsWithZeroIsNotUsed() throws {
        let exchange = SecretSession.KeyExchange(exponent: KnownAnswer.ourExponent)
        #expect(exchange.sharedValue(peer: KnownAnswer.servicePublicValue)?.first == 0)
        #expect(exchange.sharedKey(peer: KnownAnswer.servicePublicValue) == KnownAnswer.key)
        for deriveFirst in [false, true] {
            let pending = SecretSession(path: "/s", exchange: exchange, peer: KnownAnswer.servicePublicValue)
            if deriveFirst { pending.deriveKey() }
            #expect(throws: SecretSession.keyNotAgreed) { try pending.encrypt(Data("secret".utf8)) }
            #expect(throws: SecretSession.keyNotAgreed) {
                try pending.decrypt(parameters: KnownAnswer.iv, value: KnownAnswer.ciphertext)
            }
        }
    }

    /// kwalletd5 refuses a client's public value of fewer than 128 bytes, and misreads one that
    /// begins with 0xFF: ours is padded, reads as the same number, and never begins so.
    @Test func theClientsPublicValueIsAlways128Bytes() throws {
        // 2^8 = 256: a public value of 2 bytes, the shortest there is.
        let tiny = SecretSession.KeyExchange(exponent: [8])
        #expect(tiny.publicValue == [1, 0])
        #expect(tiny.paddedPublicValue == [UInt8](repeating: 0, count: 126) + [1, 0])
        // A value beginning with 0xFF comes once in 256 draws: 2,000 draws without one would be
        // a 2^-11 accident were they not drawn again.
        for _ in 0..<2000 {
            let exchange = SecretSession.KeyExchange()
            #expect(exchange.paddedPublicValue.count == 128)
            #expect(exchange.paddedPublicValue[0] != 0xFF)
            #expect(exchange.paddedPublicValue.drop { $0 == 0 }.elementsEqual(exchange.publicValue))
        }
        let service = SecretSession.KeyExchange()
        #expect(service.sharedKey(peer: tiny.paddedPublicValue) == service.sharedKey(peer: tiny.publicValue))
    }

    @Test(arguments: [0, 1, 15, 16, 17, 4096])
    func secretsOfEveryLengthRoundTrip(length: Int) throws {
        let session = SecretSession(path: "/s", key: (0..<16).map { _ in UInt8.random(in: 0...255) })
        let secret = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let sent = try session.encrypt(secret)
        #expect(sent.parameters.count == 16)
        #expect(sent.value.count == (length / 16 + 1) * 16)
        #expect(try session.decrypt(parameters: sent.parameters, value: sent.value) == secret)
    }

    @Test func malformedSecretsAreABackendFailureNotACrash() throws {
        let session = SecretSession(path: "/s", key: KnownAnswer.key)
        let cases: [([UInt8], [UInt8])] = [
            (Array(KnownAnswer.iv.dropLast()), KnownAnswer.ciphertext),  // a 15-byte IV
            (KnownAnswer.iv, []),  // nothing at all
            (KnownAnswer.iv, Array(KnownAnswer.ciphertext.dropLast())),  // not whole blocks
            (KnownAnswer.iv, Array(KnownAnswer.ciphertext.prefix(16))),  // the padding block is missing
        ]
        for (parameters, value) in cases {
            #expect(throws: KeychainError.self) { try session.decrypt(parameters: parameters, value: value) }
        }
        do {
            _ = try session.decrypt(parameters: KnownAnswer.iv, value: Array(KnownAnswer.ciphertext.prefix(16)))
        } catch {
            #expect("\(error)".contains("does not decrypt"))
        }
    }
}
