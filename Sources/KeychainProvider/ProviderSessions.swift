internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

/// A client's transfer session: plain, or encrypted with the key of a Diffie-Hellman exchange
/// (the same ``SecretSession`` keychain-cli opens as a client, from the other side).
struct ProviderSession {
    let path: String
    /// The unique bus name of the client that opened it: only that client may use it, and it is
    /// closed when that client leaves the bus.
    let owner: String
    /// nil for a plain session.
    let encryption: SecretSession?

    static let plain = "plain"

    /// The session for `algorithm` and the client's `input`, and the output to send back;
    /// nil output when the algorithm is not one we speak.
    /// - Throws: `ProviderError.invalidArguments` for a public value no key may come from.
    static func open(algorithm: String, input: OwnedVariant, path: String, owner: String) throws(ProviderError)
        -> (ProviderSession, output: OwnedVariant)?
    {
        switch algorithm {
        case plain:
            // Its input is a string (empty, says the specification; gnome-keyring takes any).
            guard Variant.has(input, type: keychain_cli_type_string()) else {
                throw .invalidArguments("the input of \(algorithm) is a string")
            }
            return (ProviderSession(path: path, owner: owner, encryption: nil), Variant.string(""))
        case SecretSession.algorithm:
            guard Variant.has(input, type: keychain_cli_type_bytestring()) else {
                throw .invalidArguments("the input of \(algorithm) is the client's public value, an array of bytes")
            }
            let exchange = SecretSession.KeyExchange()
            guard let key = exchange.sharedKey(peer: input.bytes) else {
                throw .invalidArguments("the client's public value is outside the group")
            }
            let session = ProviderSession(
                path: path, owner: owner, encryption: SecretSession(path: path, key: key))
            return (session, Variant.bytes(exchange.publicValue))
        default:
            return nil
        }
    }

    /// `secret` as a secret struct `(oayays)` in this session.
    /// - Throws: `ProviderError.failed` when an encrypted session cannot encrypt it: the secret is
    ///   then not sent at all, never sent in the clear instead.
    func encode(_ secret: Data, contentType: String) throws(ProviderError) -> OwnedVariant {
        guard let encryption else {
            return Variant.secret(session: path, parameters: [], value: Array(secret), contentType: contentType)
        }
        guard let (parameters, value) = try? encryption.encrypt(secret) else {
            throw .failed("the secret cannot be encrypted in session \(path)")
        }
        return Variant.secret(session: path, parameters: parameters, value: value, contentType: contentType)
    }

    /// The plaintext and content type of a secret struct a client sent in this session.
    func decode(_ secret: OwnedVariant) throws(ProviderError) -> (Data, contentType: String) {
        let parameters = secret.child(1).bytes
        let value = secret.child(2).bytes
        let contentType = secret.child(3).string
        var plaintext = Data(value)
        guard encryption != nil || parameters.isEmpty else {
            throw .invalidArguments("a secret of a plain session has no parameters")
        }
        if let encryption {
            do {
                plaintext = try encryption.decrypt(parameters: parameters, value: value)
            } catch {
                throw .invalidArguments("the secret does not decrypt in session \(path)")
            }
        }
        // keychain-cli's limit on every backend.
        guard plaintext.count <= maximumSecretSize else {
            throw .invalidArguments("the secret is larger than the limit of \(maximumSecretSize) bytes")
        }
        return (plaintext, contentType)
    }
}

/// A D-Bus error to answer a method call with: its name and one line.
enum ProviderError: Error {
    case invalidArguments(String)
    case notSupported(String)
    /// No object at this path (now): answered as GDBus answers for a path with no object, and as
    /// gnome-keyring answers for an item it deleted.
    case unknownObject(String)
    /// The specification's error for a missing item or collection: what gnome-keyring answers
    /// to a Properties.Set on an item it deleted.
    case noSuchObject(String)
    case noSession(String)
    case isLocked(String)
    case failed(String)
    /// A program serve's allow list (`--allow-exe`) leaves out asked for a secret.
    case accessDenied(String)

    var name: String {
        switch self {
        case .invalidArguments: "org.freedesktop.DBus.Error.InvalidArgs"
        case .notSupported: "org.freedesktop.DBus.Error.NotSupported"
        case .unknownObject: "org.freedesktop.DBus.Error.UnknownMethod"
        case .noSuchObject: "org.freedesktop.Secret.Error.NoSuchObject"
        case .noSession: "org.freedesktop.Secret.Error.NoSession"
        case .isLocked: "org.freedesktop.Secret.Error.IsLocked"
        case .failed: "org.freedesktop.DBus.Error.Failed"
        case .accessDenied: "org.freedesktop.DBus.Error.AccessDenied"
        }
    }

    var message: String {
        switch self {
        case .unknownObject(let path): "Object does not exist at path “\(path)”"
        case .invalidArguments(let text), .notSupported(let text), .noSuchObject(let text), .noSession(let text),
            .isLocked(let text), .failed(let text), .accessDenied(let text):
            text
        }
    }
}
