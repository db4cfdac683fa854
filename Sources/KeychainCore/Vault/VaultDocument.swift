#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The plaintext of a vault: what `age --decrypt` prints, and what `age --encrypt --passphrase`
/// may be given to make a vault.
///
/// ```json
/// {"format": "keychain-cli-vault", "version": 1, "items": [
///   {"service": "ci", "key": "token", "encoding": "utf8", "secret": "…",
///    "created": "2026-11-22T05:00:00Z", "modified": "2026-11-22T05:00:00Z"}]}
/// ```
/// `encoding` is `utf8` for text or `base64` for any other bytes; the dates are optional. The
/// export document (`"format": "keychain-cli-export"`) is read as a vault too.
///
/// A team vault (encrypted to age recipients) also lists them, `"recipients": ["age1…",
/// "ssh-ed25519 AAAA… comment"]`, so that whoever holds it can re-key it (`vault recipients`):
/// the age header names no recipient, and every write re-encrypts to the same ones.
public struct VaultDocument: Codable, Sendable {
    /// The format names read; the first is written.
    public static let formats = ["keychain-cli-vault", "keychain-cli-export"]
    /// The version written and read; a later one is refused rather than misread.
    public static let currentVersion = 1

    public var format: String
    public var version: Int
    public var items: [Item]
    /// The recipients a team vault is encrypted to; nil for a passphrase vault.
    public var recipients: [String]?

    public init(items: [Item], recipients: [String]? = nil) {
        self.format = Self.formats[0]
        self.version = Self.currentVersion
        self.items = items
        self.recipients = recipients
    }

    /// One secret and its dates.
    public struct Item: Codable, Sendable, Equatable {
        public var service: String
        public var key: String
        /// `utf8` or `base64`.
        public var encoding: String
        public var secret: String
        public var created: Date?
        public var modified: Date?

        public init(service: String, key: String, secret: Data, created: Date? = nil, modified: Date? = nil) {
            self.service = service
            self.key = key
            if let text = String(validating: secret, as: UTF8.self) {
                (encoding, self.secret) = ("utf8", text)
            } else {
                (encoding, self.secret) = ("base64", secret.base64EncodedString())
            }
            self.created = created
            self.modified = modified
        }

        /// The secret's bytes; nil when `encoding` is unknown or the base64 is broken.
        public var bytes: Data? {
            switch encoding {
            case "utf8": Data(secret.utf8)
            case "base64": Data(base64Encoded: secret)
            default: nil
            }
        }
    }
}

extension JSONDecoder {
    static var vault: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}

// How VaultStore turns its entries into the plaintext document and back.
extension VaultStore {
    func decode(_ plaintext: [UInt8]) throws(KeychainError) -> (Entries, recipients: [VaultRecipient]?) {
        let document: VaultDocument
        do {
            document = try JSONDecoder.vault.decode(VaultDocument.self, from: Data(plaintext))
        } catch {
            throw KeychainError.vaultCorrupt(
                path: path, reason: "it decrypts, but not to a keychain-cli vault document (\(error))")
        }
        guard VaultDocument.formats.contains(document.format) else {
            throw KeychainError.vaultCorrupt(path: path, reason: "its document's format is '\(document.format)'")
        }
        guard document.version == VaultDocument.currentVersion else {
            throw KeychainError.vaultCorrupt(
                path: path,
                reason: "its document is version \(document.version), and this keychain-cli reads version "
                    + "\(VaultDocument.currentVersion) (was it written by a newer keychain-cli?)")
        }
        var recipients: [VaultRecipient]?
        if let listed = document.recipients {
            do {
                recipients = try listed.map { (text) throws(RecipientError) in try VaultRecipient(text) }
            } catch {
                throw KeychainError.vaultCorrupt(path: path, reason: "its recipient list is malformed: \(error)")
            }
        }
        var entries: Entries = [:]
        for (index, item) in document.items.enumerated() {
            guard let service = try? ServiceName(item.service), let key = try? KeychainKey(item.key),
                let secret = item.bytes
            else {
                throw KeychainError.vaultCorrupt(path: path, reason: "its item \(index + 1) is malformed")
            }
            guard entries[service]?[key] == nil else {
                throw KeychainError.vaultCorrupt(path: path, reason: "its item \(index + 1) is a duplicate")
            }
            entries[service, default: [:]][key] = Entry(secret: secret, created: item.created, modified: item.modified)
        }
        return (entries, recipients)
    }

    func encode(_ entries: Entries, recipients: [VaultRecipient]?) throws -> [UInt8] {
        var items: [VaultDocument.Item] = []
        for (service, keys) in entries.sorted(by: { $0.key < $1.key }) {
            for (key, entry) in keys.sorted(by: { $0.key < $1.key }) {
                items.append(
                    VaultDocument.Item(
                        service: service.rawValue, key: key.rawValue, secret: entry.secret, created: entry.created,
                        modified: entry.modified))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return Array(try encoder.encode(VaultDocument(items: items, recipients: recipients?.map(\.description)))) + [
            UInt8(ascii: "\n")
        ]
    }
}
