import Foundation
import Testing

@testable import KeychainSSH

/// ADD_IDENTITY fields changed one at a time from what ssh-add sent: fields that do not make
/// one key are refused before anything is signed with them.
@Suite("SSHAgentFields: damaged keys")
struct SSHAgentFieldsMalformedTests {
    /// The fields ssh-add sent for a new key of `kind`, split: type, the key's fields, comment.
    private func sentFields(_ kind: SSHKeyKind, count: Int) throws -> (String, [[UInt8]], String) {
        let keys = try SSHKeyDirectory("agent-damaged")
        defer { keys.remove() }
        try keys.makeKey("id", kind: kind)
        var reader = SSHWireReader(Array(try keys.sshAddMessage("id").dropFirst()), "")
        let type = try reader.text()
        let fields = try (0..<count).map { _ in try reader.string() }
        let comment = try reader.text()
        try reader.end()
        return (type, fields, comment)
    }

    private func error(_ type: String, _ fields: [[UInt8]]) -> SSHKeyError? {
        var reader = SSHWireReader(
            SSHWire.string(type) + fields.flatMap { SSHWire.string($0) } + SSHWire.string("c"), "the request")
        do throws(SSHKeyError) {
            _ = try SSHPrivateKey(agentFields: &reader)
            return nil
        } catch { return error }
    }

    private func isMalformed(_ error: SSHKeyError?) -> Bool {
        if case .malformed? = error { return true }
        return false
    }

    @Test func ed25519FieldsThatDoNotFitAreMalformed() throws {
        let (type, fields, _) = try sentFields(SSHKeyKind(type: "ed25519", bits: nil), count: 2)
        #expect(error(type, fields) == nil)
        let (publicKey, both) = (fields[0], fields[1])
        var otherPublic = publicKey
        otherPublic[0] ^= 1
        #expect(isMalformed(error(type, [otherPublic, both])))  // A differs from k||A's
        #expect(isMalformed(error(type, [otherPublic, Array(both.prefix(32)) + otherPublic])))  // A not k's
        #expect(isMalformed(error(type, [publicKey, Array(both.prefix(63))])))  // wrong lengths
        #expect(isMalformed(error(type, [Array(publicKey.prefix(31)), Array(both.prefix(32)) + publicKey.prefix(31)])))
    }

    @Test func ecdsaFieldsThatDoNotFitAreMalformed() throws {
        let (type, fields, _) = try sentFields(SSHKeyKind(type: "ecdsa", bits: 256), count: 3)
        let other = try sentFields(SSHKeyKind(type: "ecdsa", bits: 256), count: 3).1
        #expect(error(type, fields) == nil)
        #expect(
            error(type, [Array("nistp384".utf8), fields[1], fields[2]])
                == .malformed("the ecdsa-sha2-nistp256 private key names the curve nistp384"))
        #expect(isMalformed(error(type, [fields[0], other[1], fields[2]])))  // Q of another key
        #expect(isMalformed(error(type, [fields[0], fields[1], other[2]])))  // d of another key
        #expect(isMalformed(error(type, [fields[0], fields[1], [0x80] + fields[2]])))  // negative d
        #expect(isMalformed(error(type, [fields[0], fields[1], [1] + fields[2]])))  // d too large
        #expect(isMalformed(error(type, [fields[0], fields[1], []])))  // d zero
        #expect(isMalformed(error("ecdsa-sha2-nistp384", fields)))  // a P-256 key said to be P-384
    }

    @Test func rsaNumbersThatDoNotMakeAKeyAreMalformed() throws {
        // n, e, d, iqmp, p, q.
        let (type, fields, _) = try sentFields(SSHKeyKind(type: "rsa", bits: 2048), count: 6)
        let other = try sentFields(SSHKeyKind(type: "rsa", bits: 2048), count: 6).1
        #expect(error(type, fields) == nil)
        func with(_ index: Int, _ value: [UInt8]) -> [[UInt8]] {
            var changed = fields
            changed[index] = value
            return changed
        }
        var dPlusOne = fields[2]
        dPlusOne[dPlusOne.count - 1] ^= 1
        #expect(isMalformed(error(type, with(2, dPlusOne))))  // d wrong
        #expect(isMalformed(error(type, with(4, other[4]))))  // p·q ≠ n
        #expect(isMalformed(error(type, with(0, other[0]))))  // n of another key
        #expect(isMalformed(error(type, with(1, [1, 0, 3]))))  // e wrong
        #expect(isMalformed(error(type, with(3, [1]))))  // iqmp wrong
        var swapped = fields
        swapped.swapAt(4, 5)
        #expect(isMalformed(error(type, swapped)))  // p and q swapped: iqmp is then wrong
    }

    @Test func certificatesSecurityKeysAndOtherTypesAreUnsupportedByName() throws {
        let anything = [[UInt8](repeating: 7, count: 32), [UInt8](repeating: 7, count: 64)]
        for type in ["ssh-ed25519-cert-v01@openssh.com", "ssh-rsa-cert-v01@openssh.com"] {
            #expect(error(type, anything) == .unsupported("\(type) certificates (plain keys only)"))
        }
        for type in ["sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"] {
            #expect(error(type, anything) == .unsupported("\(type) security keys (FIDO keys sign on the token)"))
        }
        #expect(error("ssh-dss", anything) == .unsupported("ssh-dss private keys (ed25519, ECDSA and RSA only)"))
    }

    @Test func aSmallRSAKeyIsUnsupportedBySize() throws {
        let (type, fields, _) = try sentFields(SSHKeyKind(type: "rsa", bits: 1024), count: 6)
        #expect(
            error(type, fields)
                == .unsupported("an ssh-rsa key of 1024 bits (swift-crypto signs with 2048 bits or more)"))
    }
}
