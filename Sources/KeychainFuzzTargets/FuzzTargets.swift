import Crypto
import FoundationEssentials
import KeychainAge
import KeychainCredentials
import KeychainFormats
import KeychainKeePass
import KeychainManagers
import KeychainSSH
import KeychainStore
import KeychainVault

/// The parsers that read untrusted bytes, one entry point each, for `make fuzz` (libFuzzer) and
/// for replaying the fuzz corpora in the tests. Each runs one parser on `bytes` and throws away
/// the result or the error: a crash, a hang or a sanitizer report is what counts.
package enum FuzzTargets {
    /// The target names, as `KEYCHAIN_FUZZ_TARGET` and the corpus folders under `Fuzz/corpus` spell them.
    package static let names = [
        "age-header", "age-payload", "vault-document", "import", "env-file", "template", "credential", "age-keys",
        "password-managers", "ssh-signatures", "references", "shell-quoting",
    ]

    /// Runs the parser `name` on `bytes`; false for an unknown name.
    package static func run(_ name: String, _ bytes: [UInt8]) -> Bool {
        switch name {
        case "age-header":
            // The header grammar only: the passphrase is refused before scrypt would run.
            // Recipient stanzas go to an X25519 and an ssh-ed25519 identity.
            _ = try? AgeFile.decrypt(bytes, known: nil, identities: fuzzIdentities) {
                throw AgeFile.Failure.wrongPassphrase
            }
        case "age-payload":
            // The STREAM payload after a known header, whose file key is at hand without scrypt;
            // forged chunks stop at their tag, so the same bytes also go round as a plaintext,
            // which must come back unchanged whatever its length and chunking.
            _ = try? AgeFile.decrypt(fuzzHeader.bytes + bytes, known: fuzzHeader) { [] }
            let sealed = try! AgeFile.encrypt(bytes, header: fuzzHeader)
            let opened = try! AgeFile.decrypt(sealed, known: fuzzHeader) { [] }.plaintext
            precondition(opened == bytes, "an age round trip changed the plaintext")
        case "vault-document":
            _ = try? fuzzVault.decode(bytes)
        case "import":
            let text = String(decoding: bytes, as: UTF8.self)
            let service = try! ServiceName("fuzz")
            _ = try? ImportFile.items(of: text, source: "fuzz", json: nil, defaultService: service)
        case "env-file":
            _ = try? EnvironmentMapping.parse(String(decoding: bytes, as: UTF8.self), path: "fuzz")
        case "template":
            _ = try? TemplateReference.all(in: bytes, source: "fuzz")
        case "credential":
            // What git and docker hand their helpers, and the locations keyed backends store.
            if let credential = GitCredentialMessage.parse(bytes) {
                _ = GitCredentialMessage.format(credential)
                let location = credential.location
                precondition(
                    NetworkCredential(location: location).map { $0.location == location } ?? true,
                    "a location did not read back as itself")
            }
            _ = NetworkCredential(location: String(decoding: bytes, as: UTF8.self))
            _ = try? JSONDecoder().decode(RegistryCredential.self, from: Data(bytes))
        case "password-managers":
            // The same bytes as each password manager's export: Bitwarden's JSON, 1Password's
            // export.data (both read by JSONReader, as the other JSON exports and the backups
            // below are), KeePass XML (libxml2's reader), every manager's CSV, Aegis's, andOTP's
            // and FreeOTP+'s backups; every entry's text must read back.
            let text = String(decoding: bytes, as: UTF8.self)
            // The one JSON reader of every JSON export: what it reads, written again, reads back
            // as the same value (members in their order, numbers as written).
            if let node = try? JSONReader.parse(text[...]) {
                precondition((try? JSONReader.parse(node.json[...])) == node, "a JSON value did not read back")
            }
            var entries = (try? BitwardenExport.entries(of: text, source: "fuzz")) ?? []
            entries += (try? OnePasswordExport.entries(ofData: text, source: "fuzz")) ?? []
            entries += (try? KeePassXML.database(of: bytes, source: "fuzz").entries) ?? []
            // Dashlane's, Enpass's, Proton Pass's JSON, the .1pif, KeePassX's XML (#64).
            for kind in JSONExport.Kind.allCases {
                entries += (try? JSONExport.read(kind, ManagerInput(bytes: bytes, source: "fuzz")).entries) ?? []
            }
            entries += (try? KeePassXXML.export(of: bytes, source: "fuzz").entries) ?? []
            // Every manager's CSV (the reader, the header's columns, Keeper's and Enpass's lines).
            for kind in CSVExport.Kind.allCases {
                entries += (try? CSVExport.read(kind, ManagerInput(bytes: bytes, source: "fuzz")).entries) ?? []
            }
            // Read a piece at a time (as import reads a file), a CSV gives what it gives read whole.
            precondition(
                csvRows(bytes, pieces: nil) == csvRows(bytes, pieces: 1 + Int(bytes.first ?? 0) % 13),
                "a CSV read in pieces gave other rows or another error")
            // Authenticator apps' backups: an encrypted one stops at its password, never derived.
            for kind in OTPExport.Kind.allCases {
                let input = ManagerInput(bytes: bytes, source: "fuzz") { throw FormatError("no password") }
                entries += (try? OTPExport.read(kind, input).entries) ?? []
            }
            for entry in entries {
                for field in entry.fields {
                    precondition(
                        EntryFields.value(of: field.name, in: entry.text) == field.value,
                        "a field did not read back from its entry's text")
                }
            }
        case "age-keys":
            // Recipients files, identity files, and the binary OpenSSH private key format.
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? VaultRecipient.parse(recipientsFile: text)
            _ = VaultIdentity.parse(identityFile: text)
            _ = VaultIdentity.parse(
                identityFile: "-----BEGIN OPENSSH PRIVATE KEY-----\n\(Data(bytes).base64EncodedString())\n"
                    + "-----END OPENSSH PRIVATE KEY-----\n")
        case "ssh-signatures":
            // What a signed vault reads from its writers: an armoured SSHSIG (checked against a
            // message), an allowed_signers file, public key lines, and OpenSSH private key files
            // (unencrypted ones: an encrypted one's bcrypt rounds are the file's to choose).
            if let signature = try? SSHSignature(armored: bytes) {
                _ = try? signature.verify(Array("fuzz".utf8), namespace: signature.namespace)
                precondition(
                    (try? SSHSignature(armored: Array(signature.armored.utf8))) == signature,
                    "a signature did not read back from its armour")
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let allowed = try? AllowedSigners(text), let key = try? SSHPublicKey(line: text) {
                _ = allowed.principals(for: key, namespace: "keychain-cli-vault", at: Date())
            }
            for line in text.split(whereSeparator: \.isNewline) { _ = try? SSHPublicKey(line: String(line)) }
            for file in [
                bytes,
                Array(
                    ("-----BEGIN OPENSSH PRIVATE KEY-----\n\(Data(bytes).base64EncodedString())\n"
                        + "-----END OPENSSH PRIVATE KEY-----\n").utf8),
            ] where (try? SSHPrivateKey.isEncrypted(file)) == false {
                _ = try? SSHPrivateKey(file: file) { () throws(SSHKeyError) in [] }
            }
        case "references":
            // A keychain:// reference as exec, env and inject read it: one that parses is written
            // back (escaped) to a text that parses to the same names.
            let text = String(decoding: bytes, as: UTF8.self)
            if let reference = try? KeychainReference(parsing: text) {
                precondition(
                    (try? KeychainReference(parsing: reference.text)) == reference,
                    "a reference did not read back from its text")
            }
        case "shell-quoting":
            // What `env` prints for eval: every value (no NUL) is one word each shell reads back
            // byte for byte.
            let value = bytes.filter { $0 != 0 }
            for dialect in ShellDialect.allCases {
                precondition(
                    ShellWords.read(dialect.quoted(value), as: dialect) == value,
                    "a value did not read back from its \(dialect) quoting")
            }
        default:
            return false
        }
        return true
    }

    /// A header made once with the lowest work factor, so that payloads can be tried against it.
    private static let fuzzHeader = try! AgeFile.makeHeader(
        passphrase: Array("fuzz".utf8), workFactor: 1)
    private static let fuzzIdentities: [any AgeIdentity] = {
        let ssh = Curve25519.Signing.PrivateKey()
        return [
            AgeX25519.Identity(),
            try! AgeSSHEd25519.Identity(
                seed: Array(ssh.rawRepresentation), publicKey: Array(ssh.publicKey.rawRepresentation)),
        ]
    }()
    private static let fuzzVault = VaultStore(path: "/nonexistent/fuzz.age", workFactor: 1) { _ in [] }
}

/// The rows of the CSV `bytes` (read whole, or `pieces` bytes at a time) or its error, as text.
private func csvRows(_ bytes: [UInt8], pieces: Int?) -> String {
    var offset = 0
    do {
        var rows =
            try pieces.map { size in
                try CSVRows(
                    pieces: {
                        guard offset < bytes.count else { return nil }
                        defer { offset += size }
                        return Array(bytes[offset..<min(offset + size, bytes.count)])
                    }, source: "fuzz")
            } ?? CSVRows(bytes, source: "fuzz")
        var read: [CSVRows.Row] = []
        while let row = try rows.next() { read.append(row) }
        return "\(read)"
    } catch {
        return "error: \(error)"
    }
}
