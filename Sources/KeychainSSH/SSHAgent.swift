/// An ssh-agent's keys (draft-miller-ssh-agent, OpenSSH's PROTOCOL.agent): the identities it
/// holds (REQUEST_IDENTITIES 11 → IDENTITIES_ANSWER 12), each request on a connection of its own.
package enum SSHAgent {
    static let failure: UInt8 = 5
    static let requestIdentities: UInt8 = 11
    static let identitiesAnswer: UInt8 = 12
    static let signRequest: UInt8 = 13
    static let signResponse: UInt8 = 14
    /// SSH_AGENT_RSA_SHA2_512: an ssh-rsa key signs with rsa-sha2-512.
    static let rsaSHA512: UInt32 = 4

    /// The keys the agent at `socket` holds, with their comments (keys whose blob we cannot
    /// read are left out); `.agent` when it cannot be reached, refuses, or does not answer
    /// within `timeout` seconds.
    package static func identities(socket: String, timeout: Double = 30) throws(SSHKeyError) -> [(
        key: SSHPublicKey, comment: String
    )] {
        let answer = try SSHAgentConnection.exchange([requestIdentities], socket: socket, timeout: timeout)
        var reader = SSHWireReader(answer, "the agent's list of keys")
        let type = try reader.byte()
        guard type == identitiesAnswer else { throw unexpected(type, "listing its keys") }
        let count = try reader.uint32()
        guard count <= 4096 else { throw .agent("it lists \(count) keys") }
        var keys: [(key: SSHPublicKey, comment: String)] = []
        do {
            for _ in 0..<count {
                let blob = try reader.string()
                let comment = String(decoding: try reader.string(), as: UTF8.self)
                if let key = try? SSHPublicKey(wire: blob) { keys.append((key, comment)) }
            }
            try reader.end()
        } catch {
            throw .agent("its list of keys is malformed (\(error))")
        }
        return keys
    }

    static func unexpected(_ type: UInt8, _ doing: String) -> SSHKeyError {
        type == failure ? .agent("it refused \(doing)") : .agent("it answered \(doing) with message type \(type)")
    }
}

/// A key held by the ssh-agent at `socket` ($SSH_AUTH_SOCK), signing through it
/// (SSH2_AGENTC_SIGN_REQUEST 13 → SIGN_RESPONSE 14 or FAILURE 5): ssh-rsa keys with
/// rsa-sha2-512. Each signature is checked against the key before it is returned.
package struct SSHAgentSigner: SSHSigner {
    package let publicKey: SSHPublicKey
    let socket: String
    let timeout: Double

    /// The signer of `publicKey`; `.agent` when the agent does not hold that key (or cannot be
    /// reached within `timeout` seconds).
    package init(socket: String, publicKey: SSHPublicKey, timeout: Double = 30) throws(SSHKeyError) {
        guard try SSHAgent.identities(socket: socket, timeout: timeout).contains(where: { $0.key == publicKey }) else {
            throw .agent("it does not hold the key \(publicKey.fingerprint)")
        }
        self.publicKey = publicKey
        self.socket = socket
        self.timeout = timeout
    }

    package func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        let flags = publicKey.type == "ssh-rsa" ? SSHAgent.rsaSHA512 : 0
        let request =
            [SSHAgent.signRequest] + SSHWire.string(publicKey.wire) + SSHWire.string(data)
            + SSHWire.uint32(flags)
        let answer = try SSHAgentConnection.exchange(request, socket: socket, timeout: timeout)
        var reader = SSHWireReader(answer, "the agent's signature")
        let type = try reader.byte()
        guard type == SSHAgent.signResponse else {
            throw SSHAgent.unexpected(type, "to sign with \(publicKey.fingerprint)")
        }
        let signature: [UInt8]
        do {
            signature = try reader.string()
            try reader.end()
        } catch { throw .agent("its signature answer is malformed") }
        let valid: Bool
        do { valid = try SSHVerification.isValid(signature, of: data, by: publicKey) } catch {
            if case .unsupported = error { return signature }  // a key type we cannot check
            throw .agent("its signature is malformed (\(error))")
        }
        guard valid else { throw .agent("its signature does not verify with \(publicKey.fingerprint)") }
        if publicKey.type == "ssh-rsa" {
            var algorithm = SSHWireReader(signature, "the agent's signature")
            guard (try? algorithm.text()) == "rsa-sha2-512" else {
                throw .agent("it did not sign with rsa-sha2-512")
            }
        }
        return signature
    }
}
