import FoundationEssentials
import KeychainStore

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
    /// The version written when no item has details; a later one is refused rather than misread.
    public static let currentVersion = 1
    /// The version written when an item has details (`serve`): earlier versions, which would
    /// drop them on their next write, refuse it instead.
    public static let detailsVersion = 2

    public var format: String
    public var version: Int
    public var items: [Item]
    /// The recipients a team vault is encrypted to; nil for a passphrase vault.
    public var recipients: [String]?
    /// The label `serve` gives its collection, once a client set one (version 2 only).
    public var collectionLabel: String?

    public init(items: [Item], recipients: [String]? = nil, collectionLabel: String? = nil) {
        self.format = Self.formats[0]
        self.version =
            items.contains { $0.attributes != nil } || collectionLabel != nil
            ? Self.detailsVersion : Self.currentVersion
        self.items = items
        self.recipients = recipients
        self.collectionLabel = collectionLabel
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
        /// What a Secret Service client stored with the item (``ItemDetails``), version 2 only.
        public var attributes: [String: String]?
        public var label: String?
        public var contentType: String?

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

        /// The item's details, when it has attributes.
        public var details: ItemDetails? {
            get {
                attributes.map {
                    ItemDetails(attributes: $0, label: label ?? "", contentType: contentType ?? "text/plain")
                }
            }
            set {
                (attributes, label, contentType) = (newValue?.attributes, newValue?.label, newValue?.contentType)
            }
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
    package static var vault: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
