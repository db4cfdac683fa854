import Foundation
import Testing

@testable import KeychainSSH

private let message = Array("a signed vault\n".utf8)
private let passphrase = "pass phrase"

/// Passphrase-protected OpenSSH keys as the real ssh-keygen writes them: bcrypt_pbkdf and each
/// cipher, checked by opening them and having ssh-keygen accept what they sign.
@Suite("SSHPrivateKey: passphrase-protected keys from ssh-keygen")
struct SSHPrivateKeyTests {
    /// Opens `name` with `secret`, signs, and has ssh-keygen verify the signature.
    private func opensAndSigns(_ keys: SSHKeyDirectory, _ name: String, secret: String = passphrase) throws {
        var asked = 0
        let key = try SSHPrivateKey(file: try keys.read(name)) { () throws(SSHKeyError) in
            asked += 1
            return Array(secret.utf8)
        }
        #expect(asked == 1)
        #expect(key.publicKey == (try keys.publicKey(name)))
        let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: key)
        let verified = try keys.sshKeygenVerify(
            message, signature: signature.armored, allowed: "me@example.com \(key.publicKey.line)",
            principal: "me@example.com")
        #expect(verified.status == 0, "\(verified.stderr)")
    }

    private func failure(_ keys: SSHKeyDirectory, _ name: String, secret: String) throws -> SSHKeyError? {
        let file = try keys.read(name)
        do {
            _ = try SSHPrivateKey(file: file) { () throws(SSHKeyError) in Array(secret.utf8) }
            return nil
        } catch { return error }
    }

    @Test func theDefaultEncryptionOpensWithThePassphraseOnly() throws {
        let keys = try SSHKeyDirectory("encrypted")
        defer { keys.remove() }
        try keys.makeKey("id", passphrase: passphrase)
        try keys.makeKey("plain")
        #expect(try SSHPrivateKey.isEncrypted(try keys.read("id")))
        #expect(try !SSHPrivateKey.isEncrypted(try keys.read("plain")))
        try opensAndSigns(keys, "id")
        #expect(try failure(keys, "id", secret: "pass phrasf") == .wrongPassphrase)
        #expect(try failure(keys, "id", secret: "") == .wrongPassphrase)
        // A passphrase prompt that fails stops the opening with its own error.
        #expect(throws: SSHKeyError.agent("no terminal")) {
            try SSHPrivateKey(file: try keys.read("id")) { () throws(SSHKeyError) in throw .agent("no terminal") }
        }
    }

    @Test(arguments: ["aes128-ctr", "aes192-ctr", "aes256-ctr", "aes256-gcm@openssh.com"])
    func eachCipherOpens(cipher: String) throws {
        let keys = try SSHKeyDirectory("cipher")
        defer { keys.remove() }
        try keys.makeKey("id", passphrase: passphrase, extra: ["-Z", cipher])
        try opensAndSigns(keys, "id")
        #expect(try failure(keys, "id", secret: "wrong") == .wrongPassphrase)
    }

    @Test(arguments: [1, 17])  // 17: not the default 16 (a round costs a quarter second in a debug build)
    func theRoundsTheFileNamesAreUsed(rounds: Int) throws {
        let keys = try SSHKeyDirectory("rounds")
        defer { keys.remove() }
        try keys.makeKey("id", passphrase: passphrase, extra: ["-a", "\(rounds)"])
        try opensAndSigns(keys, "id")
    }

    @Test func whatIsNotHandledIsUnsupportedByName() throws {
        let keys = try SSHKeyDirectory("unsupported")
        defer { keys.remove() }
        try keys.makeKey("chacha", passphrase: passphrase, extra: ["-Z", "chacha20-poly1305@openssh.com"])
        #expect(
            try failure(keys, "chacha", secret: passphrase)
                == .unsupported(
                    "the private key cipher chacha20-poly1305@openssh.com"))
        // swift-crypto builds RSA signing keys of 2048 bits or more.
        try keys.makeKey("rsa", type: "rsa", bits: 1024)
        #expect(
            try failure(keys, "rsa", secret: "")
                == .unsupported("an ssh-rsa key of 1024 bits (swift-crypto signs with 2048 bits or more)"))
    }

    /// Every truncation and every byte flipped of an unencrypted key's decoded blob, armoured
    /// again: refused as malformed (or unsupported, or a wrong check), never a crash.
    @Test func everyMutationOfAKeyIsRefusedOrOpens() throws {
        let keys = try SSHKeyDirectory("mutated")
        defer { keys.remove() }
        try keys.makeKey("id")
        let text = String(decoding: try keys.read("id"), as: UTF8.self)
        let body = text.split(separator: "\n").dropFirst().dropLast().joined()
        let decoded = Array(Data(base64Encoded: body)!)
        func open(_ bytes: [UInt8]) -> Bool {
            let file =
                "-----BEGIN OPENSSH PRIVATE KEY-----\n\(Data(bytes).base64EncodedString())\n"
                + "-----END OPENSSH PRIVATE KEY-----\n"
            do {
                _ = try SSHPrivateKey(file: Array(file.utf8)) { () throws(SSHKeyError) in Array("x".utf8) }
                return true
            } catch { return false }
        }
        #expect(open(decoded))
        var opened = 0
        for length in 0..<decoded.count where open(Array(decoded.prefix(length))) { opened += 1 }
        for index in decoded.indices {
            var changed = decoded
            changed[index] ^= 0x80
            if open(changed) { opened += 1 }
        }
        // Only the comment's bytes may change and still open.
        #expect(opened <= "id@test".utf8.count)
    }

    /// Blowfish's published test vector (Schneier's: an all-zero key and block), through the key
    /// schedule bcrypt_pbkdf runs on the generated tables.
    @Test func blowfishMatchesItsTestVector() {
        var words = BlowfishTables.initial
        let (left, right) = words.withUnsafeMutableBufferPointer { buffer in
            let state = Blowfish(words: buffer)
            state.expand(key: [UInt8](repeating: 0, count: 8), data: nil)
            var (left, right): (UInt32, UInt32) = (0, 0)
            state.encipher(&left, &right)
            return (left, right)
        }
        #expect((left, right) == (0x4EF9_9745, 0x6198_DD78))
    }
}
