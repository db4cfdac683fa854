import FoundationEssentials
import KeychainAge
import KeychainFormats
import KeychainStore
import KeychainSystem

/// What git's merge driver makes of one item's three versions (`vault merge-driver`).
public enum TreeVaultMergeOutcome: Sendable {
    /// The merged item, encrypted: the bytes of its new file.
    case merged([UInt8])
    /// Both sides changed these fields differently (`secret`, `label`, `attributes`,
    /// `contentType`); nothing was merged.
    case conflict(fields: [String])
    /// The merged value is theirs, and who may read theirs is not known: not merged.
    case theirRecipientsUnknown
}

/// The item a path of a repository names, and the tree vault it is in.
public struct TreeVaultItemPath: Sendable, Equatable {
    /// The vault's directory: the path's grandparent (`.` for `SERVICE/KEY.age` itself).
    public var directory: String
    public var address: SecretAddress
    /// `SERVICE/KEY` as the tree spells it (escaped): what messages name, never a value.
    public var shown: String

    /// The item `path` (`…/SERVICE/KEY.age`, escaped names) names; nil for any other path (the
    /// vault's `.recipients`, `.fingerprint.age`, `.identity.age`, a file of another name).
    public init?(_ path: String) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.count >= 2, let service = TreeVaultNames.service(directory: parts[parts.count - 2]),
            let key = TreeVaultNames.key(fileName: parts[parts.count - 1])
        else { return nil }
        let above = parts.dropLast(2).joined(separator: "/")
        directory = path.hasPrefix("/") ? "/" + above : (above.isEmpty ? "." : above)
        address = SecretAddress(service: service, key: key)
        shown = "\(parts[parts.count - 2])/\(parts[parts.count - 1].dropLast(TreeVaultNames.suffix.count))"
    }
}

extension TreeVaultStore {
    /// Merges an item's three versions field by field, all in memory: `base` (nil when both sides
    /// added it), `ours` and `theirs`, the files' bytes. A field one side changed takes that
    /// side's value; both sides changing it to the same value is no conflict; to different ones
    /// is. `created` is the earliest date, `modified` the latest. A clean merge is encrypted, with
    /// a new file key, to `recipients`: the merge of the two sides' recipients. When they are not
    /// known (nil: git said nothing of theirs), to those `.recipients` lists now (ours), which
    /// may hold a member theirs removed: a value from theirs is then not merged
    /// (``TreeVaultMergeOutcome/theirRecipientsUnknown``), as it could reach that member.
    /// - Throws: what ``open(_:at:file:)`` throws for a version no identity opens.
    public func merge(
        base: [UInt8]?, ours: [UInt8], theirs: [UInt8], at item: TreeVaultItemPath, to recipients: [VaultRecipient]?
    ) throws(KeychainError) -> TreeVaultMergeOutcome {
        let file = "\(item.shown)\(TreeVaultNames.suffix)"
        let baseItem = try base.map { bytes throws(KeychainError) in try open(bytes, at: item.address, file: file) }
        let oursItem = try open(ours, at: item.address, file: file)
        let merged = Self.merge(base: baseItem, ours: oursItem, theirs: try open(theirs, at: item.address, file: file))
        switch merged {
        case .success(let document):
            guard let recipients, !recipients.isEmpty else {
                guard document.bytes == oursItem.bytes else { return .theirRecipientsUnknown }
                return .merged(try Self.seal(document, to: try self.recipients()))
            }
            return .merged(try Self.seal(document, to: recipients))
        case .failure(let conflict): return .conflict(fields: conflict.fields)
        }
    }

    /// The recipients of a merge of `.recipients`: those both sides keep, and those either side
    /// added since `base` (one removed on either side is not kept).
    public static func mergeRecipients(base: [VaultRecipient], ours: [VaultRecipient], theirs: [VaultRecipient])
        -> [VaultRecipient]
    {
        var merged: [VaultRecipient] = []
        for recipient in ours + theirs where !merged.contains(recipient) {
            let (inOurs, inTheirs, inBase) = (
                ours.contains(recipient), theirs.contains(recipient), base.contains(recipient)
            )
            if (inOurs && inTheirs) || !inBase { merged.append(recipient) }
        }
        return merged
    }

    struct MergeConflict: Error { var fields: [String] }

    /// The three-way merge of the documents themselves.
    static func merge(base: VaultDocument.Item?, ours: VaultDocument.Item, theirs: VaultDocument.Item)
        -> Result<VaultDocument.Item, MergeConflict>
    {
        var merged = ours
        var conflicts: [String] = []
        func pick<Value: Equatable>(_ field: String, _ value: (VaultDocument.Item) -> Value) -> Value {
            let (mine, other) = (value(ours), value(theirs))
            if mine == other { return mine }
            if let base, value(base) == mine { return other }
            if let base, value(base) == other { return mine }
            conflicts.append(field)
            return mine
        }
        let secret = pick("secret") { SecretField(encoding: $0.encoding, text: $0.secret) }
        (merged.encoding, merged.secret) = (secret.encoding, secret.text)
        merged.label = pick("label", \.label)
        // An ancestor without attributes had none of them; with no ancestor (added on both
        // sides) every attribute must agree.
        merged.attributes = mergeAttributes(
            base: base.map { $0.attributes ?? [:] }, ours.attributes, theirs.attributes, &conflicts)
        merged.contentType = pick("contentType", \.contentType)
        merged.created = [ours.created, theirs.created, base?.created].compactMap { $0 }.min()
        merged.modified = [ours.modified, theirs.modified].compactMap { $0 }.max()
        guard conflicts.isEmpty else { return .failure(MergeConflict(fields: conflicts)) }
        // A label or content type without attributes is not read back (the details go with the
        // attributes), so it is not written either.
        if merged.attributes == nil, merged.label != nil || merged.contentType != nil {
            (merged.label, merged.contentType) = (nil, nil)
        }
        return .success(merged)
    }

    /// The attributes merged one by one (two sides that changed different attributes merge
    /// clean); a conflict is named `attribute NAME`. Nil when neither side has any.
    private static func mergeAttributes(
        base: [String: String]?, _ ours: [String: String]?, _ theirs: [String: String]?, _ conflicts: inout [String]
    ) -> [String: String]? {
        guard ours != nil || theirs != nil else { return nil }
        let (mine, other) = (ours ?? [:], theirs ?? [:])
        var merged: [String: String] = [:]
        for name in Set(mine.keys).union(other.keys).sorted() {
            let (left, right) = (mine[name], other[name])
            let value: String?
            if left == right {
                value = left
            } else if let base, base[name] == left {
                value = right
            } else if let base, base[name] == right {
                value = left
            } else {
                conflicts.append("attribute \(escapedForDisplay(name))")
                value = left
            }
            merged[name] = value
        }
        return merged
    }

    /// A secret as the document keeps it: equal when the bytes are.
    private struct SecretField: Equatable {
        var encoding: String
        var text: String
        static func == (left: Self, right: Self) -> Bool {
            left.encoding == right.encoding && left.text == right.text
                || VaultDocument.Item.bytes(encoding: left.encoding, text: left.text)
                    == VaultDocument.Item.bytes(encoding: right.encoding, text: right.text)
        }
    }
}

extension VaultDocument.Item {
    /// The bytes `text` stands for in `encoding`; nil when they cannot be read.
    static func bytes(encoding: String, text: String) -> Data? {
        switch encoding {
        case "utf8": Data(text.utf8)
        case "base64": Data(base64Encoded: text)
        default: nil
        }
    }
}
