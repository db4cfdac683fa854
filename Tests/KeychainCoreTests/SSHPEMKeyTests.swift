import Foundation
import TestSupport
import Testing

@testable import KeychainSSH

private let message = Array("a PEM key signs\n".utf8)

/// PEM private keys as `ssh-keygen -m PEM` (PKCS#1, SEC1) and `-m PKCS8` write them: the
/// unencrypted ones open and sign, the encrypted ones are refused with how to convert them.
@Suite("SSHPrivateKey: PEM keys from ssh-keygen")
struct SSHPEMKeyTests {
    @Test(arguments: SSHKeyKind.pem, ["PEM", "PKCS8"])
    func anUnencryptedPEMKeyOpensSignsAndWritesBack(kind: SSHKeyKind, format: String) throws {
        let keys = try SSHKeyDirectory("pem")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind, extra: ["-m", format])
        let file = try keys.read("id")
        let label =
            format == "PKCS8" ? "PRIVATE KEY" : kind.type == "rsa" ? "RSA PRIVATE KEY" : "EC PRIVATE KEY"
        #expect(String(decoding: file, as: UTF8.self).hasPrefix("-----BEGIN \(label)-----\n"))
        #expect(SSHPrivateKey.looksLikePrivateKey(file))
        #expect(try !SSHPrivateKey.isEncrypted(file))
        let key = try openKey(file)
        #expect(key.publicKey == (try keys.publicKey("id")))
        #expect(key.comment == "")
        let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: key)
        #expect(try keys.sshKeygenAccepts(signature, of: message, by: key.publicKey))
        try keys.writePrivate("written", key.openSSHFile())
        #expect(try SSHPublicKey(line: keys.sshKeygenPublicLine("written")) == key.publicKey)
        #expect(try openKey(try keys.read("written")).material.privateFields() == key.material.privateFields())
    }

    @Test(arguments: [SSHKeyKind(type: "rsa", bits: 2048), SSHKeyKind(type: "ecdsa", bits: 384)], ["PEM", "PKCS8"])
    func anEncryptedPEMKeyIsUnsupportedWithHowToConvertIt(kind: SSHKeyKind, format: String) throws {
        let keys = try SSHKeyDirectory("pem-encrypted")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind, passphrase: "pass phrase", extra: ["-m", format])
        let file = try keys.read("id")
        let text = String(decoding: file, as: UTF8.self)
        #expect(
            format == "PEM" ? text.contains("Proc-Type: 4,ENCRYPTED") : text.contains("BEGIN ENCRYPTED PRIVATE KEY"))
        #expect(SSHPrivateKey.looksLikePrivateKey(file))
        let refusal = SSHKeyError.unsupported(
            "an encrypted PEM private key (convert it to OpenSSH's format: ssh-keygen -p -f FILE rewrites it so)")
        #expect(openingError(file, passphrase: "pass phrase") == refusal)
        #expect(throws: refusal) { try SSHPrivateKey.isEncrypted(file) }
        // What the refusal advises works, and what it makes opens.
        let converted = try runSSHTool(
            "ssh-keygen", ["-p", "-P", "pass phrase", "-N", "", "-f", keys.path("id")])
        #expect(converted.status == 0, "\(converted.stderr)")
        #expect(try openKey(try keys.read("id")).publicKey == (try keys.publicKey("id")))
    }

    /// ssh-keygen writes no PEM ed25519 key; OpenSSL's PKCS#8 one opens to the same public key.
    @Test func anEd25519PKCS8KeyFromOpenSSLOpens() throws {
        let keys = try SSHKeyDirectory("pem-ed25519")
        defer { keys.remove() }
        let made = try runProcess(
            "/usr/bin/openssl", ["genpkey", "-algorithm", "ed25519", "-out", keys.path("id")], environment: [:])
        try #require(made.status == 0, "\(made.stderr)")
        let publicDER = try runProcess(
            "/usr/bin/openssl", ["pkey", "-in", keys.path("id"), "-pubout", "-outform", "DER"], environment: [:])
        let key = try openKey(try keys.read("id"))
        #expect(
            key.publicKey.wire == SSHWire.string("ssh-ed25519") + SSHWire.string(Array(publicDER.stdout.suffix(32))))
        #expect(try SSHVerification.isValid(key.sign(message), of: message, by: key.publicKey))
    }

    @Test func aSmallRSAPEMKeyIsUnsupportedBySize() throws {
        let keys = try SSHKeyDirectory("pem-small")
        defer { keys.remove() }
        try keys.makeKey("id", type: "rsa", bits: 1024, extra: ["-m", "PEM"])
        #expect(
            openingError(try keys.read("id"))
                == .unsupported("an ssh-rsa key of 1024 bits (swift-crypto signs with 2048 bits or more)"))
    }

    @Test func damagedPEMKeysAreMalformed() throws {
        let keys = try SSHKeyDirectory("pem-damaged")
        defer { keys.remove() }
        try keys.makeKey("id", kind: SSHKeyKind(type: "ecdsa", bits: 256), extra: ["-m", "PEM"])
        let text = String(decoding: try keys.read("id"), as: UTF8.self)
        var lines = text.split(separator: "\n").map(String.init)
        for damaged in [
            text.replacing("-----END EC PRIVATE KEY-----", with: ""),
            text.replacing("-----END EC PRIVATE KEY-----", with: "-----END RSA PRIVATE KEY-----"),
            "-----BEGIN EC PRIVATE KEY-----\n!!!!\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN RSA PRIVATE KEY-----\n" + lines.dropFirst().joined(separator: "\n"),
            "-----BEGIN EC PRIVATE KEY-----\nX-Header: 1\n\n" + lines.dropFirst().joined(separator: "\n"),
        ] {
            guard case .malformed? = openingError(Array(damaged.utf8)) else {
                Issue.record("not refused as malformed: \(damaged.prefix(40))")
                continue
            }
        }
        // Every line of the body cut short by one character: refused, never a crash.
        for index in lines.indices.dropFirst().dropLast() {
            let saved = lines[index]
            lines[index] = String(saved.dropLast())
            #expect(openingError(Array(lines.joined(separator: "\n").utf8)) != nil)
            lines[index] = saved
        }
    }

    @Test func looksLikePrivateKeyIsTheBeginLineOfAKeyWeRead() {
        for accepted in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbg==\n", "\n  -----BEGIN RSA PRIVATE KEY-----  \r\nx",
            "-----BEGIN EC PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\n",
        ] {
            #expect(SSHPrivateKey.looksLikePrivateKey(Array(accepted.utf8)), "\(accepted)")
        }
        for refused in [
            "", "   \n", "hunter2", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI key", "-----BEGIN SSH SIGNATURE-----\n",
            "-----BEGIN PUBLIC KEY-----\n", "-----BEGIN DSA PRIVATE KEY-----\n", "-----BEGIN OPENSSH PRIVATE KEY",
            "a note\n-----BEGIN OPENSSH PRIVATE KEY-----\n",
        ] {
            #expect(!SSHPrivateKey.looksLikePrivateKey(Array(refused.utf8)), "\(refused)")
        }
    }
}
