import FoundationEssentials
import KeychainStore
import KeychainSystem

/// The plaintext of one item of a tree vault (`DIR/SERVICE/KEY.age`): what `age --decrypt`
/// prints for it, and what `age --encrypt -R DIR/.recipients` may be given to make one.
///
/// ```json
/// {"format": "keychain-cli-vault-item", "version": 1, "service": "ci", "key": "token",
///  "encoding": "utf8", "secret": "…", "created": "2026-11-29T05:00:00Z", "modified": "…"}
/// ```
/// The fields are those of a single-file vault's item (``VaultDocument/Item``: the dates, and the
/// Secret Service details `serve` keeps) with the format and version beside them. The service and
/// key it names must be those its path names: a file moved to another name is refused, not read
/// as another item.
public struct VaultItemDocument: Codable, Sendable, Equatable {
    public static let format = "keychain-cli-vault-item"
    /// The version written and read; a later one is refused rather than misread.
    public static let currentVersion = 1

    public var item: VaultDocument.Item

    public init(_ item: VaultDocument.Item) { self.item = item }

    private enum CodingKeys: String, CodingKey { case format, version }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decode(String.self, forKey: .format)
        guard format == Self.format else {
            throw DecodingError.dataCorruptedError(
                forKey: .format, in: container, debugDescription: "the format is '\(format)', not '\(Self.format)'")
        }
        let version = try container.decode(Int.self, forKey: .version)
        guard version == Self.currentVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: container,
                debugDescription:
                    "it is version \(version), and this version reads version \(Self.currentVersion) "
                    + "(was it written by a newer keychain-cli?)")
        }
        item = try VaultDocument.Item(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.format, forKey: .format)
        try container.encode(Self.currentVersion, forKey: .version)
        try item.encode(to: encoder)
    }

    /// The document as its file holds it: sorted keys, pretty-printed, a final newline.
    public func encoded() throws -> [UInt8] {
        Array(try JSONEncoder.sortedKeys(pretty: true).encode(self)) + [UInt8(ascii: "\n")]
    }

    /// The document in `plaintext`. A member given twice (two `"secret"`s) is refused: this
    /// decoder would take the first and `age -d | jq` the last, so a reviewer and CI could be shown
    /// two values.
    public static func decode(_ plaintext: [UInt8]) throws -> VaultItemDocument {
        if let repeated = RepeatedMember.first(in: plaintext) {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [], debugDescription: "its member '\(escapedForDisplay(repeated.name))' is given twice")
            )
        }
        return try JSONDecoder.vault.decode(VaultItemDocument.self, from: Data(plaintext))
    }
}
