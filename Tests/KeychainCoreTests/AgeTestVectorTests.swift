import Crypto
import Foundation
import Testing

@testable import KeychainAge
@testable import KeychainCore

/// The C2SP/CCTV age test vectors (age/internal/tests), restated as facts: each case builds, with
/// this file's own writer, a file that differs from a well-formed one in the one way its vector
/// does, and expects the vector's outcome. Not ported: armor (the vault refuses armored files)
/// and the ML-KEM hybrid recipients (not read).
@Suite("age test vectors (C2SP CCTV), rule by rule")
struct AgeTestVectorTests {
    enum Outcome: String, Sendable {
        case success
        case noMatch = "no match"
        case headerFailure = "header failure"
        case hmacFailure = "HMAC failure"
        case payloadFailure = "payload failure"
    }

    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let expected: Outcome
        /// What a successful decryption gives.
        let plaintext: [UInt8]
        let file: @Sendable () throws -> [UInt8]
        var testDescription: String { "\(name): \(expected.rawValue)" }

        init(
            _ name: String, _ expected: Outcome, plaintext: [UInt8] = AgeTestVectorTests.plaintext,
            _ file: @escaping @Sendable () throws -> [UInt8]
        ) {
            self.name = name
            self.expected = expected
            self.plaintext = plaintext
            self.file = file
        }
    }

    @Test(arguments: headerVectors + x25519Vectors + scryptVectors + streamVectors)
    func vector(_ vector: Vector) throws {
        let file = try vector.file()
        let outcome: Outcome
        do {
            let (plaintext, _) = try AgeFile.decrypt(file, known: nil, identities: [Self.identity]) {
                Self.passphrase
            }
            #expect(plaintext == vector.plaintext, "\(vector.name)")
            outcome = .success
        } catch let failure as AgeFile.Failure {
            outcome = Self.outcome(of: failure)
        }
        #expect(outcome == vector.expected, "\(vector.name)")
    }

    /// What age's own reader would call `failure`.
    static func outcome(of failure: AgeFile.Failure) -> Outcome {
        switch failure {
        case .wrongPassphrase, .noIdentityMatches, .needsIdentity: return .noMatch
        case .malformed(let reason) where reason.hasPrefix("its recipients are of types"): return .noMatch
        case .malformed(let reason) where reason.contains("MAC does not match"): return .hmacFailure
        case .malformed(let reason) where reason.contains("payload"): return .payloadFailure
        case .malformed: return .headerFailure
        }
    }

    // MARK: The pieces every vector is made of

    /// The vectors' file key, identity, passphrase and payload.
    static let fileKey = Array("YELLOW SUBMARINE".utf8)
    static let identity = AgeX25519.Identity()
    static let passphrase = Array("password".utf8)
    static let plaintext = Array("age\n".utf8)
    static let nonce = [UInt8](repeating: 0x11, count: 16)
    static let salt = [UInt8](repeating: 0x22, count: 16)

    /// `-> ARGUMENTS` and the body in lines of 64 columns.
    static func stanza(_ arguments: [String], _ body: [UInt8]) -> String {
        "-> \(arguments.joined(separator: " "))\n" + AgeFile.wrappedLines(AgeFile.base64(body))
    }

    /// An X25519 stanza wrapping `key` for `recipient`: its share (base64) and body.
    static func x25519(
        _ key: [UInt8] = fileKey, to recipient: AgeX25519.Recipient = identity.recipient
    ) throws -> (share: String, body: [UInt8]) {
        let stanza = try recipient.wrap(key)
        return (stanza.arguments[1], stanza.body)
    }

    /// The body of an scrypt stanza: `key` wrapped under scrypt(`passphrase`, `salt`, 2^`workFactor`).
    static func scryptBody(_ key: [UInt8] = fileKey, passphrase: [UInt8] = passphrase, workFactor: Int = 10) throws
        -> [UInt8]
    {
        try AgeFile.wrap(key, with: AgeFile.deriveWrapKey(passphrase: passphrase, salt: salt, workFactor: workFactor))
    }

    static let scryptStanza: @Sendable () throws -> String = {
        stanza(["scrypt", AgeFile.base64(salt), "10"], try scryptBody())
    }

    /// The whole file: the version line, `stanzas`, the MAC line (`macLine` changes it), the
    /// nonce and `payload` (by default the plaintext in one last chunk).
    static func file(
        version: String = "age-encryption.org/v1\n", _ stanzas: String, key: [UInt8] = fileKey,
        macLine: (String) -> String = { "--- \($0)\n" }, payload: [UInt8]? = nil
    ) -> [UInt8] {
        let covered = version + stanzas + "---"
        let macKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: key), info: Array("header".utf8), outputByteCount: 32)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(covered.utf8), using: macKey)
        let header = version + stanzas + macLine(AgeFile.base64(Array(mac)))
        return Array(header.utf8) + (payload ?? chunks([(plaintext, true)], key: key))
    }

    /// The nonce and `parts` sealed as STREAM chunks 0, 1, … with their own last-chunk flags.
    static func chunks(_ parts: [(plaintext: [UInt8], last: Bool)], key: [UInt8] = fileKey) -> [UInt8] {
        let payloadKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: key), salt: nonce, info: Array("payload".utf8), outputByteCount: 32)
        var bytes = nonce
        for (counter, part) in parts.enumerated() {
            var nonceBytes = [UInt8](repeating: 0, count: 11)
            withUnsafeBytes(of: UInt64(counter).bigEndian) { nonceBytes.replaceSubrange(3..<11, with: $0) }
            nonceBytes.append(part.last ? 1 : 0)
            let box = try! ChaChaPoly.seal(part.plaintext, using: payloadKey, nonce: ChaChaPoly.Nonce(data: nonceBytes))
            bytes += box.ciphertext + box.tag
        }
        return bytes
    }
}
