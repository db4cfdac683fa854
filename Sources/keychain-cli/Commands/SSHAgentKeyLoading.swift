import FoundationEssentials
import Glibc
import KeychainCore
import KeychainSSH

/// The keys `ssh-agent --from` and `--key` name, read from the backend and opened; a
/// passphrase-protected key's passphrase asked once and tried on every other one.
struct AgentKeyLoading {
    let keychain: Keychain
    let passphrase: PassphraseInput
    /// The passphrases typed or given so far, tried in turn on each encrypted key.
    private var known: [[UInt8]] = []

    init(keychain: Keychain, passphrase: PassphraseInput) { (self.keychain, self.passphrase) = (keychain, passphrase) }

    /// - Throws: ``CommandFailure``: a --key that is not stored (1) or not a private key (65), a
    ///   --from service with none (1); a passphrase not given or wrong (77).
    mutating func load(services: [String], keys: [String]) throws -> [SSHPrivateKey] {
        defer { for index in known.indices { wipe(&known[index]) } }
        var loaded: [SSHPrivateKey] = []
        for name in keys {
            let address = try SecretAddress(argument: name, service: keychain.service)
            guard var bytes = try keychain.store.secret(service: address.service, key: address.key).map(Array.init)
            else {
                throw CommandFailure(
                    kind: .notFound,
                    message:
                        "--key \(Self.shown(address)): no such secret. Check the name with keychain-cli -s SERVICE list"
                )
            }
            defer { wipe(&bytes) }
            guard SSHPrivateKey.looksLikePrivateKey(bytes) else {
                throw CommandFailure.badData(
                    "--key \(Self.shown(address)) is not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----)")
            }
            loaded.append(try open(bytes, Self.shown(address)))
        }
        for service in services {
            let name = try ServiceName(service)
            let listing = try keychain.store.listing(service: name)
            let addresses = try listing.items.map { SecretAddress(service: name, key: try KeychainKey($0.key)) }
            var found = 0
            for (address, secret) in zip(addresses, try keychain.store.secrets(of: addresses, listedIn: listing)) {
                guard var bytes = secret.map(Array.init), SSHPrivateKey.looksLikePrivateKey(bytes) else { continue }
                defer { wipe(&bytes) }
                // One damaged key does not keep the others from being served: it is named.
                do {
                    loaded.append(try open(bytes, Self.shown(address)))
                    found += 1
                } catch let failure as CommandFailure where failure.kind == .badData {
                    writeError("keychain-cli: ssh-agent: left out \(failure.message)\n")
                }
            }
            guard found > 0 else {
                throw CommandFailure(
                    kind: .notFound,
                    message:
                        "--from \(quotedValue(service, expected: "a service name")) holds no OpenSSH private key. Store one with keychain-cli -s SERVICE set NAME < ~/.ssh/id_ed25519"
                )
            }
        }
        return loaded
    }

    private static func shown(_ address: SecretAddress) -> String {
        quotedValue("\(address.service.rawValue)/\(address.key.rawValue)", expected: "a key name")
    }

    /// The key in `bytes`; an encrypted one is tried with each passphrase known, then asked for
    /// (three times at a terminal).
    private mutating func open(_ bytes: [UInt8], _ name: String) throws -> SSHPrivateKey {
        guard (try? SSHPrivateKey.isEncrypted(bytes)) == true else { return try opened(bytes, name) }
        for candidate in known {
            if let key = try? SSHPrivateKey(file: bytes, passphrase: { () throws(SSHKeyError) in candidate }) {
                return key
            }
        }
        let tries = passphrase.isTerminal ? 3 : 1
        for attempt in 1...tries {
            var typed = try passphrase.readOther(
                "passphrase for the key \(name)", asking: "Passphrase for the key \(name): ",
                options: "--key-passphrase-fd N, --key-passphrase-file PATH or $KEYCHAIN_KEY_PASSPHRASE")
            defer { wipe(&typed) }
            do {
                let key = try SSHPrivateKey(file: bytes, passphrase: { () throws(SSHKeyError) in typed })
                known.append(typed)
                return key
            } catch .wrongPassphrase where attempt < tries {
                writeError("keychain-cli: that passphrase does not open \(name); try again\n")
            } catch .wrongPassphrase {
                throw CommandFailure(
                    kind: .denied, message: "the passphrase from \(passphrase) does not open the key \(name)")
            } catch {
                throw CommandFailure.badData("the key \(name) cannot be read: \(error)")
            }
        }
        throw CommandFailure(kind: .denied, message: "no passphrase opens the key \(name)")
    }

    /// A key that is not encrypted (or a file that is not a key at all).
    private func opened(_ bytes: [UInt8], _ name: String) throws -> SSHPrivateKey {
        do {
            return try SSHPrivateKey(file: bytes, passphrase: { () throws(SSHKeyError) in throw .wrongPassphrase })
        } catch {
            throw CommandFailure.badData("the key \(name) cannot be read: \(error)")
        }
    }
}

/// `ssh-agent --store SERVICE`: a key ssh-add added, stored under its comment made a key name
/// (else "ssh-key"), or that name with -2, -3, … when another key holds it. Each name is taken
/// by the backend's add-if-absent: never decided on a listing another writer may have outdated.
struct AgentKeyStoring: Sendable {
    let store: any SecretStore
    let service: ServiceName

    var hook: @Sendable (SSHPrivateKey) -> Result<String, KeychainError> {
        { key in Result { () throws(KeychainError) in try storeKey(key) } }
    }

    private func storeKey(_ key: SSHPrivateKey) throws(KeychainError) -> String {
        var file = key.openSSHFile()
        defer { wipe(&file) }
        let base = Self.name(of: key.comment)
        for suffix in [""] + (2...9).map({ "-\($0)" }) {
            let name = base + suffix
            guard let keyName = try? KeychainKey(name) else { continue }
            if try store.addSecret(Data(file), service: service, key: keyName) { return "\(service.rawValue)/\(name)" }
            // Taken: by this very key (added again), or by another.
            if var held = try store.secret(service: service, key: keyName).map(Array.init) {
                defer { wipe(&held) }
                let same = try? SSHPrivateKey(
                    file: held, passphrase: { () throws(SSHKeyError) in throw .wrongPassphrase })
                if same?.publicKey == key.publicKey { return "\(service.rawValue)/\(name) (already there)" }
            }
        }
        throw .backendFailure(detail: "the names \(base) to \(base)-9 of \(service.rawValue) hold other secrets")
    }

    /// A comment (often user@host or a path) as a key name: letters, digits and ._@- kept.
    static func name(of comment: String) -> String {
        let last = comment.split(separator: "/").last.map(String.init) ?? ""
        let kept = last.utf8.prefix(64).map { byte -> UInt8 in
            let isLetter = (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
            return isLetter || Array("._@-".utf8).contains(byte) ? byte : UInt8(ascii: "-")
        }
        let name = String(String(decoding: kept, as: UTF8.self).trimming(where: { $0 == "-" || $0 == "." }))
        return name.isEmpty ? "ssh-key" : name
    }
}
