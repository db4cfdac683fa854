import Foundation
import Testing

@testable import KeychainSSH

/// A valid SSHSIG blob by a fixed ed25519 key, pulled apart and spliced: every damaged input is
/// refused with `.malformed` (never a crash, never a huge allocation).
@Suite("SSHSignature: malformed SSHSIG input")
struct SSHMalformedSignatureTests {
    private static let wireKey = SSHWire.string("ssh-ed25519") + SSHWire.string([UInt8](repeating: 7, count: 32))

    private func blob(
        magic: [UInt8] = Array("SSHSIG".utf8), version: UInt32 = 1, namespace: String = "keychain-cli-vault",
        hash: String = "sha512", signature: [UInt8]? = nil
    ) -> [UInt8] {
        magic + SSHWire.uint32(version) + SSHWire.string(Self.wireKey) + SSHWire.string(namespace)
            + SSHWire.string([UInt8]()) + SSHWire.string(hash)
            + SSHWire.string(
                signature ?? SSHWire.string("ssh-ed25519") + SSHWire.string([UInt8](repeating: 1, count: 64)))
    }

    private func armor(_ blob: [UInt8]) -> [UInt8] {
        Array("-----BEGIN SSH SIGNATURE-----\n\(SSHWire.base64(blob))\n-----END SSH SIGNATURE-----\n".utf8)
    }

    private func isMalformed(_ armored: [UInt8]) -> Bool {
        do {
            _ = try SSHSignature(armored: armored)
            return false
        } catch {
            if case .malformed = error { return true }
            return false
        }
    }

    @Test func theWellFormedBlobParses() throws {
        let signature = try SSHSignature(armored: armor(blob()))
        #expect(signature.namespace == "keychain-cli-vault")
        #expect(signature.blob == blob())
    }

    @Test func theReservedFieldIsKeptAsGivenAndSigned() throws {
        var withReserved = blob()
        let at = 6 + 4 + 4 + Self.wireKey.count + 4 + "keychain-cli-vault".utf8.count
        withReserved.replaceSubrange(at..<(at + 4), with: SSHWire.string([1, 2, 3]))
        let signature = try SSHSignature(armored: armor(withReserved))
        #expect(signature.blob == withReserved)
        #expect(signature != (try SSHSignature(armored: armor(blob()))))
    }

    @Test func aKeyTypeWeCannotVerifyIsUnsupported() throws {
        let type = "sk-ssh-ed25519@openssh.com"
        let key = try SSHPublicKey(
            wire: SSHWire.string(type) + SSHWire.string([UInt8](repeating: 7, count: 32)) + SSHWire.string("ssh:"))
        let signature = SSHSignature(
            publicKey: key, namespace: "n", hashAlgorithm: "sha512",
            signature: SSHWire.string(type) + SSHWire.string([UInt8](repeating: 1, count: 64)))
        #expect(throws: SSHKeyError.unsupported("signatures by \(type) keys")) {
            try signature.verify([1], namespace: "n")
        }
        let parsed = try SSHSignature(armored: Array(signature.armored.utf8))
        #expect(parsed == signature)
    }

    @Test func damagedBlobsAreMalformed() {
        let good = blob()
        for length in [0, 1, 5, 6, 9, 10, 40, good.count - 1] {
            #expect(isMalformed(armor(Array(good.prefix(length)))), "truncated to \(length)")
        }
        #expect(isMalformed(armor(blob(magic: Array("SSHSIH".utf8)))))
        #expect(isMalformed(armor(blob(version: 2))))
        #expect(isMalformed(armor(blob(version: 0))))
        #expect(isMalformed(armor(blob(namespace: ""))))
        #expect(isMalformed(armor(blob(hash: "md5"))))
        #expect(isMalformed(armor(good + [0])))
        // A length field claiming 4 GiB, at the public key and at the signature.
        var huge = good
        huge.replaceSubrange(10..<14, with: [0xff, 0xff, 0xff, 0xf0])
        #expect(isMalformed(armor(huge)))
        huge = good
        huge.replaceSubrange((good.count - 4 - 83)..<(good.count - 83), with: [0x7f, 0xff, 0xff, 0xff])
        #expect(isMalformed(armor(huge)))
    }

    /// Every truncation and every byte set to 0x00, 0x7f, 0x80 or 0xff: parsed or refused as
    /// malformed, never a crash or another error.
    @Test func everyMutationIsParsedOrMalformed() {
        let good = blob()
        var outcomes = (parsed: 0, malformed: 0)
        func check(_ bytes: [UInt8]) {
            do {
                _ = try SSHSignature(blob: bytes)
                outcomes.parsed += 1
            } catch {
                guard case .malformed = error else {
                    Issue.record("\(error)")
                    return
                }
                outcomes.malformed += 1
            }
        }
        for length in 0..<good.count { check(Array(good.prefix(length))) }
        for index in good.indices {
            for value: UInt8 in [0x00, 0x7f, 0x80, 0xff] where good[index] != value {
                var changed = good
                changed[index] = value
                check(changed)
            }
        }
        #expect(outcomes.malformed > good.count)
        #expect(outcomes.parsed > 0)  // the signature bytes themselves are not checked by parsing
    }

    @Test func damagedArmourIsMalformed() {
        let good = armor(blob())
        #expect(
            isMalformed(Array(String(decoding: good, as: UTF8.self).replacing("BEGIN SSH", with: "BEGIN PGP").utf8)))
        #expect(isMalformed(Array(good.dropLast(10))))
        #expect(isMalformed(good + Array("trailing garbage\n".utf8)))
        #expect(isMalformed(Array("-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----\n".utf8)))
        #expect(isMalformed([UInt8](repeating: 0x41, count: 70 * 1024)))
        #expect(isMalformed([0xff, 0xfe]))
        #expect(isMalformed([]))
    }

    @Test func malformedPublicKeysAndPrivateKeysAreRefused() {
        #expect(throws: SSHKeyError.self) { try SSHPublicKey(line: "ssh-ed25519 AAAA") }
        #expect(throws: SSHKeyError.self) { try SSHPublicKey(line: "ssh-ed25519 !!!") }
        #expect(throws: SSHKeyError.self) {
            try SSHPublicKey(line: "ssh-rsa " + SSHWire.base64(Self.wireKey))  // says rsa, is ed25519
        }
        #expect(throws: SSHKeyError.self) { try SSHPublicKey(wire: Self.wireKey + [0]) }
        #expect(throws: SSHKeyError.self) {
            try SSHPrivateKey(file: Array("not a key".utf8)) { () throws(SSHKeyError) in [] }
        }
        #expect(throws: SSHKeyError.self) {
            try SSHPrivateKey(
                file: Array(
                    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n"
                        .utf8)
            ) { () throws(SSHKeyError) in [] }
        }
    }
}
