import Glibc
import KeychainCore
import KeychainSSH

// Who signs the vault's writes and whose signatures its reads accept: --signing-key,
// --allowed-signers, --require-signed and their variables (docs/backends/vault.md, "Signed vaults").
extension Settings {
    /// The signatures of these settings' vault.
    /// - Throws: a usage error for --require-signed without allowed signers, or a bad variable.
    func vaultSigning() throws -> VaultSigning {
        let required = try signaturesRequired()
        let allowed = try allowedSignersFile()
        if required && allowed == nil {
            throw CommandFailure.usage(
                "--require-signed (or $KEYCHAIN_REQUIRE_SIGNED) needs to know who may sign: give "
                    + "--allowed-signers PATH or $KEYCHAIN_ALLOWED_SIGNERS")
        }
        return VaultSigning(signer: try signingKeyFile(), allowed: allowed, required: required)
    }

    /// Whether signatures are read or made at all (the holder, which checks none, is then not used).
    func signaturesInEffect() throws -> Bool {
        try signaturesRequired() || signingKey != nil || environment("KEYCHAIN_SIGNING_KEY") != nil
    }

    /// --require-signed, else $KEYCHAIN_REQUIRE_SIGNED (1, true or yes; 0, false or no).
    func signaturesRequired() throws -> Bool {
        if requireSigned { return true }
        guard let text = try environment("KEYCHAIN_REQUIRE_SIGNED") else { return false }
        switch text {
        case "1", "true", "yes": return true
        case "0", "false", "no": return false
        default:
            throw CommandFailure.usage(
                "KEYCHAIN_REQUIRE_SIGNED is \(quotedValue(text, expected: "1 or 0")); set it to 1 to require "
                    + "signatures, or 0 (or unset it) not to")
        }
    }

    /// The allowed signers of --allowed-signers, else of $KEYCHAIN_ALLOWED_SIGNERS, whose SHA-256
    /// must be $KEYCHAIN_ALLOWED_SIGNERS_SHA256 when that is set; nil when none are given.
    func allowedSignersFile() throws -> AllowedSigners? {
        let pinned = try environment("KEYCHAIN_ALLOWED_SIGNERS_SHA256")
        guard let path = try allowedSigners ?? environment("KEYCHAIN_ALLOWED_SIGNERS") else {
            if pinned != nil {
                throw CommandFailure.usage(
                    "KEYCHAIN_ALLOWED_SIGNERS_SHA256 is set, but no allowed signers file is given: give "
                        + "--allowed-signers PATH or $KEYCHAIN_ALLOWED_SIGNERS")
            }
            return nil
        }
        guard let bytes = try readInput(path: path, limit: smallInputLimit) else {
            throw CommandFailure.badData("the allowed signers file \(quotedPath(path)) is larger than 1 MiB")
        }
        if let pinned { try VaultSigning.checkPin(bytes, pinned: pinned, path: path) }
        do {
            return try AllowedSigners(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw CommandFailure.badData("the allowed signers file \(quotedPath(path)) is unusable: \(error)")
        }
    }

    /// The key of --signing-key, else of $KEYCHAIN_SIGNING_KEY; nil when none is given.
    func signingKeyFile() throws -> SigningKey? {
        guard let path = try signingKey ?? environment("KEYCHAIN_SIGNING_KEY") else { return nil }
        return try SigningKey(path: path, mayPrompt: mayPrompt, agentSocket: try environment("SSH_AUTH_SOCK"))
    }
}

/// The key --signing-key names: an OpenSSH private key file, opened at the first signature (its
/// passphrase asked then, on the terminal), or a public key (a `.pub` file), whose private half
/// the ssh-agent at $SSH_AUTH_SOCK holds. A read that signs nothing asks nothing.
final class SigningKey: SSHSigner, @unchecked Sendable {
    let publicKey: SSHPublicKey
    private let path: String
    private let mayPrompt: Bool
    /// The private key file's bytes, or nil: the agent's socket.
    private let file: [UInt8]?
    private let agentSocket: String?
    private let opened = Locked<(any SSHSigner)?>(nil)

    init(path: String, mayPrompt: Bool, agentSocket: String?) throws {
        guard let bytes = try readInput(path: path, limit: smallInputLimit) else {
            throw KeychainError.cannotSign(detail: "the signing key \(quotedPath(path)) is larger than 1 MiB")
        }
        (self.path, self.mayPrompt, self.agentSocket) = (path, mayPrompt, agentSocket)
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") {
            do {
                publicKey = try SSHPrivateKey.publicKey(ofFile: bytes)
            } catch {
                throw KeychainError.cannotSign(detail: "the signing key \(quotedPath(path)) is unusable: \(error)")
            }
            file = bytes
            return
        }
        guard let line = text.split(whereSeparator: \.isNewline).first, let key = try? SSHPublicKey(line: String(line))
        else {
            throw KeychainError.cannotSign(
                detail: "\(quotedPath(path)) is neither an OpenSSH private key nor a public key (a .pub file)")
        }
        guard agentSocket != nil else {
            throw KeychainError.cannotSign(
                detail: "\(quotedPath(path)) is a public key, whose private half an ssh-agent holds, and "
                    + "$SSH_AUTH_SOCK is not set (start ssh-agent and ssh-add the key)")
        }
        (publicKey, file) = (key, nil)
    }

    deinit {
        if var file { wipe(&file) }
    }

    func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] {
        try signer().sign(data)
    }

    /// The key that signs, opened once.
    private func signer() throws(SSHKeyError) -> any SSHSigner {
        try opened.withLock { opened throws(SSHKeyError) in
            if let opened { return opened }
            let signer: any SSHSigner
            if let file {
                signer = try SSHPrivateKey(file: file) { () throws(SSHKeyError) in try askPassphrase() }
            } else {
                signer = try SSHAgentSigner(socket: agentSocket ?? "", publicKey: publicKey)
            }
            opened = signer
            return signer
        }
    }

    /// The private key file's passphrase, asked on the terminal.
    private func askPassphrase() throws(SSHKeyError) -> [UInt8] {
        let tty = mayPrompt ? open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1
        guard tty >= 0 else {
            throw .unsupported(
                "it is passphrase-protected and there is no terminal to ask at: add it to an ssh-agent (ssh-add) "
                    + "and give its .pub file")
        }
        defer { close(tty) }
        guard
            let passphrase = try? readHiddenLine(
                prompt: "Passphrase for the signing key \(path): ", input: tty, output: tty)
        else { throw .wrongPassphrase }
        return passphrase
    }
}
