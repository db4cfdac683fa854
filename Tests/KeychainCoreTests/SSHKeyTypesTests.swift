import Crypto
import CryptoExtras
import Foundation
import TestSupport
import Testing

@testable import KeychainSSH

private let message = Array("a key the agent serves\n".utf8)
private let passphrase = "pass phrase"

/// Every key type and size ssh-keygen makes, unencrypted and passphrase-protected: opened, its
/// signatures accepted by ssh-keygen, and written back as a file ssh-keygen reads.
@Suite("SSHPrivateKey: each key type from ssh-keygen")
struct SSHKeyTypesTests {
    @Test(arguments: SSHKeyKind.all, [false, true])
    func opensSignsAndWritesBack(kind: SSHKeyKind, encrypted: Bool) throws {
        let keys = try SSHKeyDirectory("types")
        defer { keys.remove() }
        // Two bcrypt rounds: a round costs a quarter second in a debug build.
        try keys.makeKey("id", kind: kind, passphrase: encrypted ? passphrase : "", extra: ["-a", "2"])
        var asked = 0
        let key = try SSHPrivateKey(file: try keys.read("id")) { () throws(SSHKeyError) in
            asked += 1
            return Array(passphrase.utf8)
        }
        #expect(asked == (encrypted ? 1 : 0))
        #expect(try SSHPrivateKey.isEncrypted(try keys.read("id")) == encrypted)
        #expect(key.publicKey == (try keys.publicKey("id")))
        #expect(key.publicKey.type == kind.wireType)
        #expect(key.comment == "id@test")

        // SSHSIG through SSHSigner's sign(_:): ssh-keygen accepts it.
        let signature = try SSHSignature.sign(message, namespace: sshTestNamespace, with: key)
        #expect(try keys.sshKeygenAccepts(signature, of: message, by: key.publicKey))
        #expect(try sshSignatureAlgorithm(signature.signature) == (kind.type == "rsa" ? "rsa-sha2-512" : kind.wireType))
        try checkFlags(key, kind: kind, keys: keys)

        // Written back: ssh-keygen derives the same public key, keeps the comment, and signs
        // with it what we verify; our parser reads the same key.
        let file = key.openSSHFile()
        try keys.writePrivate("written", file)
        // Writing wiped its copies, not the key (swift-crypto's Data may share the key's storage).
        #expect(try SSHVerification.isValid(key.sign(message), of: message, by: key.publicKey))
        let line = try keys.sshKeygenPublicLine("written")
        #expect(try SSHPublicKey(line: line) == key.publicKey)
        #expect(line.hasSuffix(" id@test"))
        let theirs = try SSHSignature(armored: try keys.sshKeygenSign(message, key: "written"))
        #expect(theirs.publicKey == key.publicKey)
        #expect(try theirs.verify(message, namespace: sshTestNamespace))
        let reread = try openKey(file)
        #expect(reread.publicKey == key.publicKey)
        #expect(reread.comment == "id@test")
        #expect(try reread.material.privateFields() == key.material.privateFields())
        checkArmour(file)
    }

    /// Each flag value: RSA picks its algorithm as OpenSSH's agent does; other keys ignore them.
    private func checkFlags(_ key: SSHPrivateKey, kind: SSHKeyKind, keys: SSHKeyDirectory) throws {
        for flags: UInt32 in [0, 2, 4, 6] {
            let blob = try key.sign(message, flags: flags)
            let algorithm = try sshSignatureAlgorithm(blob)
            guard kind.type == "rsa" else {
                #expect(algorithm == kind.wireType)
                #expect(try SSHVerification.isValid(blob, of: message, by: key.publicKey))
                continue
            }
            #expect(algorithm == [0: "ssh-rsa", 2: "rsa-sha2-256", 4: "rsa-sha2-512", 6: "rsa-sha2-256"][flags])
            if flags == 0 {
                // SHA-1 PKCS#1 v1.5, which SSHSIG (and so SSHVerification and ssh-keygen) refuse.
                #expect(try !SSHVerification.isValid(blob, of: message, by: key.publicKey))
                #expect(try rsaSHA1IsValid(blob, of: message, by: key.publicKey))
                #expect(try opensslAcceptsSHA1(blob, keys: keys))
                #expect(
                    try !keys.sshKeygenAccepts(sshSignature(message, by: key, flags: 0), of: message, by: key.publicKey)
                )
            } else {
                #expect(try SSHVerification.isValid(blob, of: message, by: key.publicKey))
                #expect(
                    try keys.sshKeygenAccepts(
                        sshSignature(message, by: key, flags: flags), of: message, by: key.publicKey))
            }
        }
    }

    /// An "ssh-rsa" (SHA-1) signature checked with the RSA public key on its own.
    private func rsaSHA1IsValid(_ blob: [UInt8], of data: [UInt8], by key: SSHPublicKey) throws -> Bool {
        var outer = SSHWireReader(blob, "")
        _ = try outer.string()
        let signature = try outer.string()
        var fields = SSHWireReader(key.wire, "")
        _ = try fields.string()
        let (e, n) = (try fields.positiveMPInt(), try fields.positiveMPInt())
        let publicKey = try _RSA.Signing.PublicKey(n: n, e: e)
        return publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: Insecure.SHA1.hash(data: data),
            padding: .insecurePKCS1v1_5)
    }

    /// Whether `openssl dgst -sha1 -verify` (the public key exported by ssh-keygen) accepts an
    /// "ssh-rsa" signature of `message`: a check by another implementation than ours.
    private func opensslAcceptsSHA1(_ blob: [UInt8], keys: SSHKeyDirectory) throws -> Bool {
        var reader = SSHWireReader(blob, "")
        _ = try reader.string()
        try Data(try reader.string()).write(to: URL(fileURLWithPath: keys.path("sha1.sig")))
        try Data(message).write(to: URL(fileURLWithPath: keys.path("sha1.message")))
        let exported = try runSSHTool("ssh-keygen", ["-e", "-m", "PKCS8", "-f", keys.path("id.pub")])
        try exported.stdout.write(to: URL(fileURLWithPath: keys.path("id.pem")))
        let verified = try runProcess(
            "/usr/bin/openssl",
            [
                "dgst", "-sha1", "-verify", keys.path("id.pem"), "-signature", keys.path("sha1.sig"),
                keys.path("sha1.message"),
            ],
            environment: [:])
        return verified.status == 0 && verified.stdoutText.contains("Verified OK")
    }

    /// The file's armour is OpenSSH's: BEGIN and END lines, base64 lines of 70 columns, and a
    /// private section whose check integers match and whose padding is 1, 2, 3, ….
    private func checkArmour(_ file: [UInt8]) {
        let lines = String(decoding: file, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "-----BEGIN OPENSSH PRIVATE KEY-----")
        #expect(lines.suffix(2) == ["-----END OPENSSH PRIVATE KEY-----", ""])
        let body = lines.dropFirst().dropLast(2)
        #expect(body.dropLast().allSatisfy { $0.count == 70 } && (body.last?.count ?? 0) <= 70)
    }

    @Test func checkIntegersAreRandomAndTheUnencryptedFormatIsOpenSSHs() throws {
        let keys = try SSHKeyDirectory("written")
        defer { keys.remove() }
        try keys.makeKey("id", kind: SSHKeyKind(type: "ecdsa", bits: 256))
        let key = try openKey(try keys.read("id"))
        func decoded(_ file: [UInt8]) throws -> OpenSSHKeyFile { try OpenSSHKeyFile(file) }
        let (first, second) = (try decoded(key.openSSHFile()), try decoded(key.openSSHFile()))
        #expect([first.cipher, first.kdf] == ["none", "none"])
        #expect(first.kdfOptions.isEmpty && first.tag.isEmpty)
        #expect(first.publicKey == key.publicKey.wire)
        #expect(first.privateSection.count % 8 == 0)
        #expect(first.privateSection.prefix(4) == first.privateSection.dropFirst(4).prefix(4))
        #expect(first.privateSection.prefix(8) != second.privateSection.prefix(8))
        #expect(first.privateSection.dropFirst(8) == second.privateSection.dropFirst(8))
    }

    @Test func rsaKeysUnder2048BitsAreUnsupportedBySize() throws {
        let keys = try SSHKeyDirectory("small")
        defer { keys.remove() }
        try keys.makeKey("small", type: "rsa", bits: 1024)
        try keys.makeKey("odd", type: "rsa", bits: 2047)
        #expect(
            openingError(try keys.read("small"))
                == .unsupported("an ssh-rsa key of 1024 bits (swift-crypto signs with 2048 bits or more)"))
        #expect(
            openingError(try keys.read("odd"))
                == .unsupported("an ssh-rsa key of 2047 bits (swift-crypto signs with 2048 bits or more)"))
    }
}
