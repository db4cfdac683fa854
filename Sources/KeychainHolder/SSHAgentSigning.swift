import FoundationEssentials
import KeychainSSH
import KeychainStore
import KeychainSystem

/// One line of the ssh-agent's access log: a signature asked for, never what was signed.
private struct SignatureRecord: Encodable {
    var time: Date
    var operation = "sign"
    /// The key's SHA256 fingerprint and comment.
    var key: String
    var comment: String
    var allowed: Bool
    /// Why it was refused, when it was.
    var refused: String?
    var pid: Int32
    var uid: UInt32
    var executable: String?
    /// The hosts the client said its connection is bound to (OpenSSH's session-bind), their host
    /// keys' fingerprints, first the one it connected to; `forwarded` when the agent is
    /// forwarded to a host beyond it.
    var hosts: [String]
    var forwarded: Bool
}

extension SSHAgentServer {
    /// Signs `data` with `key` for `peer`, if the agent holds it and is unlocked, the peer's
    /// program is allowed, and the user confirms (a key added with `ssh-add -c`); records it.
    func sign(_ publicKey: SSHPublicKey, _ data: [UInt8], flags: UInt32, for peer: FramedPeer) -> [UInt8] {
        let held = keys.withLock { $0.find(publicKey) }
        let executable = AccessPolicy.executable(ofProcess: UInt32(peer.pid))
        let hosts = bound.withLock { $0[peer.connection] ?? [] }
        var refused: String?
        if let failure = logFailure.withLock({ $0 }) {
            refused = "the access log cannot be written (\(failure))"
        } else if held == nil {
            refused = keys.withLock { $0.isLocked } ? "the agent is locked" : "the agent does not hold the key"
        } else if !policy.allows(executable) {
            refused = "the program is not one --allow-exe names"
        } else if !policy.allows(peer.executable) {
            refused = "the program that connected is not one --allow-exe names"
        } else if held!.confirm, !hooks.confirm(confirmation(held!.key, executable: executable, hosts: hosts)) {
            refused = "the user did not confirm"
        }
        // Asked again after a confirmation, which may take minutes: the key removed, expired or
        // locked meanwhile signs nothing.
        let current =
            refused == nil && held?.confirm == true
            ? keys.withLock { $0.find(publicKey) }.flatMap { $0.expires.map { $0 > bootSeconds() } ?? true ? $0 : nil }
            : held
        if refused == nil && current == nil { refused = "the key was removed, or the agent locked, while asking" }
        var signature: [UInt8]?
        if refused == nil, let current {
            signature = try? current.key.sign(data, flags: flags)
            if signature == nil { refused = "the key cannot sign this request" }
        }
        if policy.log != nil {
            let record = SignatureRecord(
                time: Date(), key: publicKey.fingerprint, comment: held?.key.comment ?? "", allowed: refused == nil,
                refused: refused, pid: peer.pid, uid: peer.uid, executable: executable, hosts: hosts.map(\.host),
                forwarded: hosts.contains(where: \.forwarding))
            if let failure = policy.append(record) {
                let first = logFailure.withLock { known in
                    defer { known = known ?? failure }
                    return known == nil
                }
                if first { hooks.tell("cannot write the access log (\(failure)); every signature is refused from now") }
                return SSHAgentRequest.failure
            }
        }
        guard let signature else { return SSHAgentRequest.failure }
        keys.withLock { $0.used(now: bootSeconds()) }
        return SSHAgentRequest.signature(signature)
    }

    /// What $SSH_ASKPASS asks, as OpenSSH's agent words it, and who asks.
    private func confirmation(_ key: SSHPrivateKey, executable: String?, hosts: [(host: String, forwarding: Bool)])
        -> String
    {
        let comment = escapedForDisplay(String(key.comment.prefix(200)))
        var text = "Allow use of key \(comment)?\nKey fingerprint \(key.publicKey.fingerprint)."
        if let executable { text += "\nAsked by \(escapedForDisplay(executable))." }
        if let host = hosts.first { text += "\nFor the host whose key is \(host.host)." }
        return text
    }
}
