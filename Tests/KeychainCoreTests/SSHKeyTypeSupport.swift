import Foundation
import Testing

@testable import KeychainSSH

/// A key type and size ssh-keygen makes (`-t TYPE -b BITS`).
struct SSHKeyKind: Sendable, CustomTestStringConvertible {
    let type: String
    let bits: Int?

    var testDescription: String { bits.map { "\(type)-\($0)" } ?? type }
    /// The wire type name: "ssh-ed25519", "ecdsa-sha2-nistp384", "ssh-rsa".
    var wireType: String {
        switch type {
        case "ed25519": "ssh-ed25519"
        case "ecdsa": "ecdsa-sha2-nistp\(bits ?? 256)"
        default: "ssh-rsa"
        }
    }

    static let all = [
        SSHKeyKind(type: "ed25519", bits: nil), SSHKeyKind(type: "ecdsa", bits: 256),
        SSHKeyKind(type: "ecdsa", bits: 384), SSHKeyKind(type: "ecdsa", bits: 521),
        SSHKeyKind(type: "rsa", bits: 2048), SSHKeyKind(type: "rsa", bits: 3072),
        SSHKeyKind(type: "rsa", bits: 4096),
    ]
    /// The kinds `ssh-keygen -m PEM` and `-m PKCS8` write as PEM (it writes ed25519 keys in its own format).
    static let pem = all.filter { $0.type != "ed25519" && $0.bits != 4096 }
}

extension SSHKeyDirectory {
    /// `ssh-keygen` makes a key of `kind` named `name`.
    @discardableResult
    func makeKey(_ name: String, kind: SSHKeyKind, passphrase: String = "", extra: [String] = []) throws -> String {
        try makeKey(name, type: kind.type, bits: kind.bits, passphrase: passphrase, extra: extra)
    }

    /// Writes `bytes` as `name`, readable by its owner only (ssh-keygen refuses other private keys).
    func writePrivate(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path(name)))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(name))
    }

    /// `ssh-keygen -y -f NAME`: the public key line it derives from the private key file.
    func sshKeygenPublicLine(_ name: String) throws -> String {
        let result = try runSSHTool("ssh-keygen", ["-y", "-f", path(name)])
        guard result.status == 0 else { throw SSHToolFailure(result: result) }
        return String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Whether ssh-keygen accepts `signature` (armoured) of `message` by `key`.
    func sshKeygenAccepts(_ signature: SSHSignature, of message: [UInt8], by key: SSHPublicKey) throws -> Bool {
        let verified = try sshKeygenVerify(
            message, signature: signature.armored, allowed: "me@example.com \(key.line)", principal: "me@example.com")
        return verified.status == 0
    }
}

/// The algorithm name of a signature blob.
func sshSignatureAlgorithm(_ blob: [UInt8]) throws -> String {
    var reader = SSHWireReader(blob, "the signature")
    return try reader.text()
}

/// An SSHSIG whose inner signature `key` makes with `flags` (rsa-sha2-256 and -512 alike).
func sshSignature(_ message: [UInt8], by key: SSHPrivateKey, flags: UInt32) throws -> SSHSignature {
    let signed = try SSHSignature.signedData(
        message, namespace: sshTestNamespace, reserved: [], hashAlgorithm: "sha512")
    return SSHSignature(
        publicKey: key.publicKey, namespace: sshTestNamespace, hashAlgorithm: "sha512",
        signature: try key.sign(signed, flags: flags))
}

/// Opens a private key file with no passphrase to give.
func openKey(_ file: [UInt8]) throws(SSHKeyError) -> SSHPrivateKey {
    try SSHPrivateKey(file: file) { () throws(SSHKeyError) in throw .agent("no passphrase expected") }
}

/// The error opening `file` gives, or nil when it opens.
func openingError(_ file: [UInt8], passphrase: String = "") -> SSHKeyError? {
    do {
        _ = try SSHPrivateKey(file: file) { () throws(SSHKeyError) in Array(passphrase.utf8) }
        return nil
    } catch { return error }
}
