import Foundation
import TestSupport
import Testing

@testable import KeychainSSH

private let message = Array("the vault's manifest\n".utf8)

/// SSHSIG both ways with the real ssh-keygen (OpenSSH): our signatures are accepted by
/// `ssh-keygen -Y verify`, and ssh-keygen's are accepted by ours, and only for what was signed.
@Suite("SSHSignature: SSHSIG against ssh-keygen")
struct SSHSignatureInteropTests {
    @Test func ourEd25519SignatureIsAcceptedBySSHKeygen() throws {
        let keys = try SSHKeyDirectory("ours")
        defer { keys.remove() }
        try keys.makeKey("id")
        let key = try SSHPrivateKey(file: try keys.read("id")) { () throws(SSHKeyError) in
            Issue.record("no passphrase asked for an unencrypted key")
            return []
        }
        #expect(key.publicKey == (try keys.publicKey("id")))
        let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: key)
        let armored = signature.armored
        #expect(armored.hasPrefix("-----BEGIN SSH SIGNATURE-----\n"))
        #expect(armored.hasSuffix("\n-----END SSH SIGNATURE-----\n"))
        #expect(armored.split(separator: "\n").allSatisfy { $0.count <= 70 || $0.hasPrefix("-----") })
        let allowed = "alice@example.com \(key.publicKey.line)\n"
        let verified = try keys.sshKeygenVerify(
            message, signature: armored, allowed: allowed, principal: "alice@example.com")
        #expect(verified.status == 0, "\(verified.stderr)")
        let novalidate = try runSSHTool(
            "ssh-keygen", ["-Y", "check-novalidate", "-n", sshTestNamespace, "-s", keys.path("message.sig")],
            stdin: Data(message))
        #expect(novalidate.status == 0, "\(novalidate.stderr)")
        // ssh-keygen refuses it for another message and another namespace: it checks what we signed.
        let changed = try keys.sshKeygenVerify(
            message + [0x21], signature: armored, allowed: allowed, principal: "alice@example.com")
        #expect(changed.status != 0)
        let otherNamespace = try keys.sshKeygenVerify(
            message, signature: armored, allowed: allowed, principal: "alice@example.com", namespace: "file")
        #expect(otherNamespace.status != 0)
        // ssh-keygen's own signature with the same key is the same bytes (ed25519 is deterministic).
        #expect(Array(armored.utf8) == (try keys.sshKeygenSign(message, key: "id")))
    }

    @Test func sshKeygensEd25519SignatureVerifiesOnlyForWhatWasSigned() throws {
        let keys = try SSHKeyDirectory("theirs")
        defer { keys.remove() }
        try keys.makeKey("id")
        let armored = try keys.sshKeygenSign(message, key: "id")
        let signature = try SSHSignature(armored: armored)
        #expect(signature.publicKey == (try keys.publicKey("id")))
        #expect(signature.namespace == sshTestNamespace)
        #expect(signature.hashAlgorithm == "sha512")
        #expect(signature.armored == String(decoding: armored, as: UTF8.self))
        #expect(try signature.verify(message, namespace: sshTestNamespace))
        #expect(try !signature.verify(message + [0x0a], namespace: sshTestNamespace))
        #expect(try !signature.verify(message, namespace: "file"))
        var flipped = signature.signature
        flipped[flipped.count - 5] ^= 0x01
        let forged = SSHSignature(
            publicKey: signature.publicKey, namespace: signature.namespace, hashAlgorithm: "sha512", signature: flipped)
        #expect(try !forged.verify(message, namespace: sshTestNamespace))
        // Another key's signature under this one's name does not verify.
        try keys.makeKey("other")
        let other = try SSHSignature(armored: try keys.sshKeygenSign(message, key: "other"))
        let swapped = SSHSignature(
            publicKey: signature.publicKey, namespace: sshTestNamespace, hashAlgorithm: "sha512",
            signature: other.signature)
        #expect(try !swapped.verify(message, namespace: sshTestNamespace))
    }

    @Test(arguments: [("ecdsa", 256), ("ecdsa", 384), ("ecdsa", 521), ("rsa", 2048)])
    func sshKeygensECDSAAndRSASignaturesVerify(type: String, bits: Int) throws {
        let keys = try SSHKeyDirectory("\(type)\(bits)")
        defer { keys.remove() }
        try keys.makeKey("id", type: type, bits: bits)
        let signature = try SSHSignature(armored: try keys.sshKeygenSign(message, key: "id"))
        #expect(signature.publicKey == (try keys.publicKey("id")))
        #expect(try signature.verify(message, namespace: sshTestNamespace))
        #expect(try !signature.verify(Array("another message".utf8), namespace: sshTestNamespace))
        var flipped = signature.signature
        flipped[flipped.count - 3] ^= 0x40
        let forged = SSHSignature(
            publicKey: signature.publicKey, namespace: signature.namespace, hashAlgorithm: "sha512", signature: flipped)
        #expect(try !forged.verify(message, namespace: sshTestNamespace))
    }

    @Test func aPublicKeyLineAndFingerprintAreSSHKeygens() throws {
        let keys = try SSHKeyDirectory("fingerprint")
        defer { keys.remove() }
        for (name, type, bits) in [("ed", "ed25519", nil), ("ec", "ecdsa", 256), ("rsa", "rsa", 2048)]
            as [(String, String, Int?)]
        {
            try keys.makeKey(name, type: type, bits: bits)
            let line = String(decoding: try keys.read("\(name).pub"), as: UTF8.self)
            let key = try SSHPublicKey(line: line)
            #expect(line.hasPrefix(key.line + " \(name)@test"))
            let listed = try runSSHTool("ssh-keygen", ["-l", "-E", "sha256", "-f", keys.path("\(name).pub")])
            #expect(listed.stdoutText.split(separator: " ")[1] == key.fingerprint[...])
            #expect(try SSHPublicKey(wire: key.wire) == key)
        }
    }
}
