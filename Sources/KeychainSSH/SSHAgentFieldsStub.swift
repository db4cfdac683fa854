import Crypto
import KeychainSystem

// TEMPORARY (replaced by the ssh-keys branch's reader of every key type): ed25519 only.
extension SSHPrivateKey {
    init(agentFields reader: inout SSHWireReader) throws(SSHKeyError) {
        guard try reader.text() == "ssh-ed25519" else { throw .unsupported("stub") }
        _ = try reader.string()
        var both = try reader.string()
        defer { wipe(&both) }
        let comment = try reader.string()
        guard both.count == 64 else { throw .malformed("stub") }
        try self.init(stubSeed: Array(both[..<32]), comment: String(decoding: comment, as: UTF8.self))
    }
}

extension SSHPrivateKey {
    package func openSSHFile() -> [UInt8] { [] }
    package static func looksLikePrivateKey(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: Array("-----BEGIN OPENSSH".utf8))
    }
}
