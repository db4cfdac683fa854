/// A request to an ssh-agent, as OpenSSH's clients send them (draft-miller-ssh-agent, OpenSSH's
/// PROTOCOL.agent): the message's body after its length, read whole.
package enum SSHAgentRequest: Sendable {
    /// SSH_AGENTC_REQUEST_IDENTITIES (11).
    case listKeys
    /// SSH_AGENTC_SIGN_REQUEST (13): `data` signed by `key`; `flags` pick an RSA key's hash.
    case sign(key: SSHPublicKey, data: [UInt8], flags: UInt32)
    /// SSH_AGENTC_ADD_IDENTITY (17) or ADD_ID_CONSTRAINED (25): a key for the agent's life, or
    /// `lifetime` seconds; `confirm`: each use asked of the user first.
    case add(SSHPrivateKey, lifetime: UInt32?, confirm: Bool)
    /// SSH_AGENTC_REMOVE_IDENTITY (18), by its public key's blob.
    case remove(SSHPublicKey)
    /// SSH_AGENTC_REMOVE_ALL_IDENTITIES (19).
    case removeAll
    /// SSH_AGENTC_LOCK (22) and UNLOCK (23), with the password.
    case lock(password: SSHSecretBytes)
    case unlock(password: SSHSecretBytes)
    /// The session-bind@openssh.com extension (27): the client's connection is to the host of
    /// `hostKey`, which signed `sessionID` (checked when it is read).
    case bind(hostKey: SSHPublicKey, forwarding: Bool)
    /// What the agent answers with SSH_AGENT_FAILURE: another message type, an extension or
    /// constraint it does not know, named for the log.
    case unsupported(String)

    /// SSH_AGENT_FAILURE (5) and SSH_AGENT_SUCCESS (6), as whole bodies.
    package static let failure: [UInt8] = [5]
    package static let success: [UInt8] = [6]

    /// The request of a message body.
    /// - Throws: ``SSHKeyError/malformed(_:)`` for a message that is not one (the agent answers
    ///   it with SSH_AGENT_FAILURE and keeps the connection, as OpenSSH's does).
    package init(message: [UInt8]) throws(SSHKeyError) {
        var reader = SSHWireReader(message, "the request")
        let type = try reader.byte()
        switch type {
        case 11:
            self = .listKeys
        case 13:
            let key = try SSHPublicKey(wire: reader.string())
            let data = try reader.string()
            self = .sign(key: key, data: data, flags: try reader.uint32())
        case 17, 25:
            let key = try SSHPrivateKey(agentFields: &reader)
            var (lifetime, confirm): (UInt32?, Bool) = (nil, false)
            while type == 25, !reader.isEmpty {
                switch try reader.byte() {
                case 1: lifetime = try reader.uint32()
                case 2: confirm = true
                case 255:
                    self = .unsupported("the key constraint \(Self.escapedName(try reader.string()))")
                    return
                case let other:
                    self = .unsupported("key constraint \(other)")
                    return
                }
            }
            self = .add(key, lifetime: lifetime, confirm: confirm)
        case 18:
            self = .remove(try SSHPublicKey(wire: reader.string()))
        case 19:
            self = .removeAll
        case 22, 23:
            var bytes = try reader.string()
            let password = SSHSecretBytes(taking: &bytes)
            self = type == 22 ? .lock(password: password) : .unlock(password: password)
        case 27:
            let name = try reader.string()
            guard name == Array("session-bind@openssh.com".utf8) else {
                self = .unsupported("the extension \(Self.escapedName(name))")
                return
            }
            let hostKey = try SSHPublicKey(wire: reader.string())
            let sessionID = try reader.string()
            let signature = try reader.string()
            let forwarding = try reader.byte() != 0
            guard (try? SSHVerification.isValid(signature, of: sessionID, by: hostKey)) == true else {
                throw .malformed("the session-bind signature does not verify with the host key")
            }
            self = .bind(hostKey: hostKey, forwarding: forwarding)
        default:
            self = .unsupported("message type \(type)")
            return
        }
        try reader.end()
    }

    /// SSH_AGENT_IDENTITIES_ANSWER (12) listing `keys`.
    package static func identities(_ keys: [(key: SSHPublicKey, comment: String)]) -> [UInt8] {
        var answer = [12] + SSHWire.uint32(UInt32(keys.count))
        for (key, comment) in keys { answer += SSHWire.string(key.wire) + SSHWire.string(comment) }
        return answer
    }

    /// The four bytes before a message of `count` bytes.
    package static func framedLength(_ count: Int) -> [UInt8] { SSHWire.uint32(UInt32(count)) }

    /// SSH_AGENT_SIGN_RESPONSE (14) carrying `signature`.
    package static func signature(_ signature: [UInt8]) -> [UInt8] { [14] + SSHWire.string(signature) }

    /// A name from a message for a log line: printable ASCII, at most 64 characters.
    private static func escapedName(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(64).map { $0 > 0x20 && $0 < 0x7f ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
