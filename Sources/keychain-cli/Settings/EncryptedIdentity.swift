import Glibc
import KeychainAgeRSA
import KeychainCore
import KeychainSSH

/// The identity of an OpenSSH key given by --identity, --identity-fd or their variables that
/// ``VaultIdentity/parse(identityFile:)`` does not read: a passphrase-protected ed25519 key, or
/// an RSA key (age's ssh-rsa), encrypted or not; nil for any other file.
///
/// An encrypted key is known by the public key its file holds in the clear, and decrypted in
/// memory only when a vault encrypted to it is opened (a vault `unlock`'s holder opens never
/// asks), its passphrase read then from $KEYCHAIN_KEY_PASSPHRASE, else asked on the terminal
/// (three tries), and wiped once the key is derived. Nothing is written anywhere.
/// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` for a key of another type.
func sshKeyIdentity(_ file: [UInt8], source: String, vault: String, mayPrompt: Bool) throws -> VaultIdentity? {
    guard SSHPrivateKey.looksLikePrivateKey(file) else { return nil }
    let unusable = { (reason: String) in
        KeychainError.noMatchingIdentity(path: vault, detail: "the identity file of \(source) is unusable: \(reason)")
    }
    let key = KeyFile(file: file, source: source, vault: vault, mayPrompt: mayPrompt)
    if (try? SSHPrivateKey.publicKey(ofFile: file))?.type == "ssh-rsa" {
        do {
            return try AgeSSHRSA.identity(file: file) { try key.open() }
        } catch {
            throw unusable("\(error)")
        }
    }
    guard (try? SSHPrivateKey.isEncrypted(file)) == true else { return nil }
    let publicKey: SSHPublicKey
    do { publicKey = try SSHPrivateKey.publicKey(ofFile: file) } catch { throw unusable("\(error)") }
    switch publicKey.type {
    case "ssh-ed25519":
        let deferred = AgeSSHEd25519.deferredIdentity(publicKey: Array(publicKey.wire.suffix(32))) {
            () throws -> [UInt8] in
            let opened = try key.open()
            return opened.withEd25519Seed { $0 } ?? []
        }
        guard let deferred else { throw unusable("its ed25519 public key is not a valid point") }
        return VaultIdentity(key: deferred)
    default:
        throw unusable(
            "it is a passphrase-protected \(publicKey.type) key; age's ssh keys here are ssh-ed25519 and ssh-rsa")
    }
}

/// A passphrase-protected OpenSSH key file, opened with the passphrase of
/// $KEYCHAIN_KEY_PASSPHRASE or the terminal.
struct KeyFile: Sendable {
    let file: [UInt8]
    /// Where it was given (`--identity '~/.ssh/id_ed25519'`), for messages.
    let source: String
    let vault: String
    let mayPrompt: Bool

    static let variable = "KEYCHAIN_KEY_PASSPHRASE"

    /// The key, decrypted; the passphrases read are wiped.
    /// - Throws: ``KeychainError/noMatchingIdentity(path:detail:)`` (77) when no passphrase is
    ///   given or none given opens it, saying what to do.
    func open() throws(KeychainError) -> SSHPrivateKey {
        if Environment.bytes(Self.variable) != nil {
            return try attempt(from: "$\(Self.variable)") { () throws(KeychainError) in
                Environment.bytes(Self.variable) ?? []
            }
        }
        let tty = mayPrompt ? Glibc.open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) : -1
        guard tty >= 0 else {
            throw failure(
                "is passphrase-protected, and there is no terminal to ask for its passphrase: set "
                    + "$\(Self.variable), or run 'keychain-cli unlock' at a terminal first")
        }
        defer { close(tty) }
        for attempt in 1...3 {
            do {
                return try self.attempt(from: "the terminal") { () throws(KeychainError) -> [UInt8] in
                    let typed = try? readHiddenLine(
                        prompt: "Passphrase for the key of \(source): ", input: tty, output: tty)
                    guard let typed else {
                        throw failure("is passphrase-protected, and no passphrase was typed for it")
                    }
                    return typed
                }
            } catch .noMatchingIdentity(_, let detail) where attempt < 3 && detail.hasSuffix(Self.wrongSuffix) {
                let again = Array("That passphrase does not open the key; try again.\n".utf8)
                _ = write(tty, again, again.count)
            }
        }
        throw failure("is not opened by the passphrases typed")  // not reached: the third try throws
    }

    private static let wrongSuffix = "(check it; 'ssh-keygen -y -f KEY' asks for it too)"

    /// The key opened with the passphrase `read` gives (`origin`: where it came from).
    private func attempt(from origin: String, _ read: () throws(KeychainError) -> [UInt8]) throws(KeychainError)
        -> SSHPrivateKey
    {
        var passphrase = try read()
        defer { wipe(&passphrase) }
        do {
            return try SSHPrivateKey(file: file) { () throws(SSHKeyError) in passphrase }
        } catch .wrongPassphrase {
            throw failure("is not opened by the passphrase from \(origin) \(Self.wrongSuffix)")
        } catch {
            throw KeychainError.noMatchingIdentity(
                path: vault, detail: "the identity file of \(source) is unusable: \(error)")
        }
    }

    /// "the identity key of SOURCE `what`": a message whose words say what to do (no hint).
    private func failure(_ what: String) -> KeychainError {
        .noMatchingIdentity(path: vault, detail: "the identity key of \(source) \(what)")
    }
}
