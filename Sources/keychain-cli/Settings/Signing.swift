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
        let pinned = try environment("KEYCHAIN_VAULT_ID")
        if let pinned, pinned.utf8.count > 128 || !pinned.unicodeScalars.allSatisfy(Self.isVaultIDCharacter) {
            throw CommandFailure.usage(
                "KEYCHAIN_VAULT_ID is \(quotedValue(pinned, expected: "a vault id")); set it to the vault's id "
                    + "(one word of at most 128 letters, digits, - and _, as vault init printed it)")
        }
        guard let path = try signingKey ?? environment("KEYCHAIN_SIGNING_KEY") else {
            return VaultSigning(allowed: allowed, required: required, expectedVaultID: pinned)
        }
        // Opened at the first write, once: a read needs no key (nor its file, nor its agent).
        let (mayPrompt, socket, timeout) = (mayPrompt, try environment("SSH_AUTH_SOCK"), try resolvedTimeout())
        let opened = Locked<(any SSHSigner)?>(nil)
        return VaultSigning(
            signer: { () throws(KeychainError) in
                do {
                    return try opened.withLock { opened in
                        if let opened { return opened }
                        let signer = try openSigningKey(
                            path: path, mayPrompt: mayPrompt, agentSocket: socket, timeout: timeout)
                        opened = signer
                        return signer
                    }
                } catch let error as KeychainError {
                    throw error
                } catch let failure as CommandFailure {
                    throw .cannotSign(detail: failure.message)
                } catch {
                    throw .cannotSign(detail: "\(error)")
                }
            }, allowed: allowed, required: required, expectedVaultID: pinned)
    }

    /// The characters of a vault id (`.vault-id`): ASCII letters, digits, - and _.
    static func isVaultIDCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.isASCII
            && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
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
        guard let bytes = try readRegularFile(path, what: "the allowed signers file") else {
            throw CommandFailure.badData("the allowed signers file \(quotedPath(path)) is larger than 1 MiB")
        }
        if let pinned { try VaultSigning.checkPin(bytes, pinned: pinned, path: path) }
        do {
            return try AllowedSigners(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw CommandFailure.badData("the allowed signers file \(quotedPath(path)) is unusable: \(error)")
        }
    }

}

/// The key --signing-key names, opened: an OpenSSH private key file (its passphrase asked on the
/// terminal when it has one), or a public key (a `.pub` file), whose private half the ssh-agent at
/// `agentSocket` ($SSH_AUTH_SOCK) holds.
/// - Throws: ``KeychainError/cannotSign(detail:)`` saying why it cannot sign.
func openSigningKey(path: String, mayPrompt: Bool, agentSocket: String?, timeout: Double) throws -> any SSHSigner {
    guard var bytes = try readRegularFile(path, what: "the signing key") else {
        throw KeychainError.cannotSign(detail: "the signing key \(quotedPath(path)) is larger than 1 MiB")
    }
    defer { wipe(&bytes) }
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        if text.contains("-----BEGIN OPENSSH PRIVATE KEY-----") {
            // The vault's contract (docs/backends/vault.md): a key file is ed25519, other types sign
            // through an agent. Checked on the file's public key before a passphrase is asked, and on
            // the key opened.
            let onlyEd25519 = { (type: String) throws(SSHKeyError) in
                guard type == "ssh-ed25519" else { throw .unsupported("\(type) private keys (ed25519 only)") }
            }
            if let stated = try? SSHPrivateKey.publicKey(ofFile: bytes) { try onlyEd25519(stated.type) }
            let key = try SSHPrivateKey(file: bytes) { () throws(SSHKeyError) in
                try askPassphrase(for: path, mayPrompt: mayPrompt)
            }
            try onlyEd25519(key.publicKey.type)
            return key
        }
        guard let line = text.split(whereSeparator: \.isNewline).first,
            let key = try? SSHPublicKey(line: String(line))
        else {
            throw KeychainError.cannotSign(
                detail: "\(quotedPath(path)) is neither an OpenSSH private key nor a public key (a .pub file)")
        }
        guard let agentSocket else {
            throw KeychainError.cannotSign(
                detail: "\(quotedPath(path)) is a public key, whose private half an ssh-agent holds, and "
                    + "$SSH_AUTH_SOCK is not set (start ssh-agent and ssh-add the key)")
        }
        return try AgentKey(socket: agentSocket, publicKey: key, timeout: timeout)
    } catch let error as SSHKeyError {
        throw KeychainError.cannotSign(detail: "the signing key \(quotedPath(path)): \(error)")
    }
}

/// A key the ssh-agent holds, asked within --timeout: an agent that does not answer in time is 75,
/// as every server that does not answer is.
private struct AgentKey: SSHSigner {
    let signer: SSHAgentSigner
    let socket: String
    let timeout: Double
    var publicKey: SSHPublicKey { signer.publicKey }

    init(socket: String, publicKey: SSHPublicKey, timeout: Double) throws {
        (self.socket, self.timeout) = (socket, timeout)
        do throws(SSHKeyError) {
            signer = try SSHAgentSigner(socket: socket, publicKey: publicKey, timeout: timeout)
        } catch {
            guard case .agent(let what) = error, what.hasPrefix("timed out") else { throw error }
            throw KeychainError.serverTimedOut(address: socket, seconds: timeout, detail: "the ssh-agent: \(what)")
        }
    }

    func sign(_ data: [UInt8]) throws(SSHKeyError) -> [UInt8] { try signer.sign(data) }
}

/// The file at `path` (at most 1 MiB; nil when larger), which must be a regular file: a FIFO
/// nobody writes would hang the read.
private func readRegularFile(_ path: String, what: String) throws -> [UInt8]? {
    let bytes: [UInt8]?
    do throws(FileError) {
        bytes = try readFileIfPresent(path, limit: smallInputLimit, regular: true)
    } catch {
        if error.code == EFBIG { return nil }
        throw CommandFailure.io("\(what) \(quotedPath(path)) cannot be read: \(error)")
    }
    guard let bytes else { throw CommandFailure.io("\(what) \(quotedPath(path)) does not exist") }
    return bytes
}

/// A passphrase-protected signing key's passphrase, asked on the terminal.
private func askPassphrase(for path: String, mayPrompt: Bool) throws(SSHKeyError) -> [UInt8] {
    let tty = mayPrompt ? open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1
    guard tty >= 0 else {
        throw .unsupported(
            "a passphrase-protected key with no terminal to ask at: add it to an ssh-agent (ssh-add) and give "
                + "its .pub file")
    }
    defer { close(tty) }
    guard
        let passphrase = try? readHiddenLine(
            prompt: "Passphrase for the signing key \(path): ", input: tty, output: tty)
    else { throw .wrongPassphrase }
    return passphrase
}
