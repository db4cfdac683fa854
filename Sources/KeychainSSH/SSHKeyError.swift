/// What went wrong with an OpenSSH key, signature, allowed_signers file or ssh-agent: each case's
/// text says what, in words for a one-line message, and never holds secret bytes.
package enum SSHKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input is not of the format: what is wrong with it.
    case malformed(String)
    /// A key type, cipher, KDF or option this code does not handle, named.
    case unsupported(String)
    /// An encrypted private key whose passphrase did not open it.
    case wrongPassphrase
    /// The ssh-agent: no socket, a refusal, no such key, a failure answer, a timeout.
    case agent(String)

    package var description: String {
        switch self {
        case .malformed(let what): "malformed: \(what)"
        case .unsupported(let what): "unsupported: \(what)"
        case .wrongPassphrase: "the passphrase does not open the private key"
        case .agent(let what): "ssh-agent: \(what)"
        }
    }
}
