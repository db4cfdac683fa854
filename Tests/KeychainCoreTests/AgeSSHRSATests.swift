import Foundation
import Testing

@testable import KeychainAge
@testable import KeychainAgeRSA
@testable import KeychainSSH

/// age's ssh-rsa type (libgcrypt's RSA-OAEP with age's label) on keys from the real ssh-keygen:
/// a file key wrapped opens with its key alone, and a stanza altered, cut or of the wrong shape
/// is malformed, never a file key.
@Suite("age ssh-rsa recipients and identities")
struct AgeSSHRSATests {
    /// An RSA key pair of `bits` from ssh-keygen (unencrypted, or with `passphrase`).
    static func key(bits: Int = 2048, passphrase: String = "") throws -> (file: [UInt8], publicLine: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("id_rsa").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ssh-keygen")
        process.arguments = ["-q", "-t", "rsa", "-b", "\(bits)", "-N", passphrase, "-C", "member@ci", "-f", path]
        try process.run()
        process.waitUntilExit()
        let file = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        return (file, try String(contentsOfFile: path + ".pub", encoding: .utf8))
    }

    static func identity(_ file: [UInt8], passphrase: String = "") throws -> any AgeIdentity {
        let vault = try #require(
            try AgeSSHRSA.identity(file: file) {
                try SSHPrivateKey(file: file) { () throws(SSHKeyError) in Array(passphrase.utf8) }
            })
        return vault.key
    }

    @Test func aFileKeyWrappedToTheRecipientOpensWithItsKeyAlone() throws {
        let (file, line) = try Self.key()
        AgeSSHRSA.register()
        let recipient = try VaultRecipient(line)
        #expect(recipient.key.hasPrefix("ssh-rsa AAAA") && recipient.comment == "member@ci")
        let fileKey = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let stanza = try recipient.recipient.wrap(fileKey)
        #expect(stanza.arguments.count == 2 && stanza.arguments[0] == "ssh-rsa" && stanza.body.count == 256)
        let identity = try Self.identity(file)
        #expect(identity.recipientText == recipient.key)
        #expect(try identity.unwrap(stanza) == fileKey)
        // Each wrap is randomised (OAEP's seed): the same key, another ciphertext.
        #expect(try recipient.recipient.wrap(fileKey).body != stanza.body)
        // A whole age file, through the header and payload code.
        let header = try AgeFile.makeHeader(recipients: [recipient.recipient])
        let sealed = try AgeFile.encrypt(Array("secret".utf8), header: header)
        let opened = try AgeFile.decrypt(sealed, known: nil, identities: [identity]) { [] }
        #expect(opened.plaintext == Array("secret".utf8))
    }

    @Test func anotherKeyAMalformedStanzaAndACutOrAlteredCiphertext() throws {
        let (file, line) = try Self.key()
        let (otherFile, _) = try Self.key()
        AgeSSHRSA.register()
        let recipient = try VaultRecipient(line).recipient
        let fileKey = [UInt8](repeating: 7, count: 16)
        let stanza = try recipient.wrap(fileKey)
        let identity = try Self.identity(file)
        // Another key: its tag differs, so the stanza is not for it.
        #expect(try Self.identity(otherFile).unwrap(stanza) == nil)
        // The wrong shape: three arguments, or none after the type.
        for arguments in [stanza.arguments + ["extra"], ["ssh-rsa"]] {
            #expect(throws: AgeFile.Failure.self) { try identity.unwrap(AgeFile.Stanza(arguments, body: stanza.body)) }
        }
        // Cut short, one byte altered, or empty: malformed, never a file key.
        var altered = stanza.body
        altered[100] ^= 1
        for body in [Array(stanza.body.dropLast()), Array(stanza.body.dropFirst(128)), altered, []] {
            #expect(throws: AgeFile.Failure.self) { try identity.unwrap(AgeFile.Stanza(stanza.arguments, body: body)) }
        }
        // A stanza made for an ssh-ed25519 key's label (another type) never reaches this one.
        #expect(identity.stanzaType == "ssh-rsa")
    }

    @Test func smallKeysAndOtherLinesAreRefused() throws {
        AgeSSHRSA.register()
        let (_, small) = try Self.key(bits: 1024)
        #expect(throws: RecipientError.self) { try VaultRecipient(small) }
        #expect(throws: RecipientError.self) { try VaultRecipient("ssh-rsa AAAAnotbase64") }
        let (smallFile, _) = try Self.key(bits: 1024)
        #expect(throws: SSHKeyError.self) { try Self.identity(smallFile) }
    }

    /// An encrypted RSA key is known by its public key: no passphrase is asked until a stanza
    /// tagged for it is met, and then once.
    @Test func anEncryptedKeyIsOpenedOnlyForItsOwnStanzasAndOnce() throws {
        let (file, line) = try Self.key(passphrase: "rsa pass")
        let (_, otherLine) = try Self.key()
        AgeSSHRSA.register()
        let asked = Counter()
        let vault = try #require(
            try AgeSSHRSA.identity(file: file) {
                asked.add()
                return try SSHPrivateKey(file: file) { () throws(SSHKeyError) in Array("rsa pass".utf8) }
            })
        let identity = vault.key
        #expect(identity.recipientText == (try VaultRecipient(line)).key && asked.value == 0)
        #expect(
            try identity.unwrap(try VaultRecipient(otherLine).recipient.wrap([UInt8](repeating: 1, count: 16))) == nil)
        #expect(asked.value == 0)
        let fileKey = [UInt8](repeating: 2, count: 16)
        let stanza = try VaultRecipient(line).recipient.wrap(fileKey)
        #expect(try identity.unwrap(stanza) == fileKey)
        #expect(try identity.unwrap(stanza) == fileKey)
        #expect(asked.value == 1)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
