import Crypto
import FoundationEssentials
import KeychainAge
import KeychainStore
import KeychainSystem

/// Runs git with these arguments in the vault's directory and gives its standard output (and
/// takes `input` on its standard input); throws when git fails or is missing. The command line
/// gives it (the library starts no process).
public typealias GitRunner = @Sendable (_ arguments: [String], _ input: [UInt8]) throws(KeychainError) -> [UInt8]

// `history` and `rollback` from git: an item's versions are the commits that changed its file.
// Every version is read from git's objects into memory and decrypted there; nothing is checked
// out or written.
extension TreeVaultStore: VersionedSecretStore {
    public func history(service: ServiceName, key: KeychainKey) throws(KeychainError) -> [ItemVersion] {
        let address = SecretAddress(service: service, key: key)
        let path = try repositoryPath(address)
        let log = try runGit(["log", "-z", "--format=%H%x1f%at%x1f%an <%ae>", "--", path.inTree])
        let commits = log.split(separator: 0).compactMap { record -> (String, Date?, String)? in
            let fields = record.split(separator: 0x1F, omittingEmptySubsequences: false).map(trimmed)
            guard fields.count == 3 else { return nil }
            return (fields[0], Double(fields[1]).map(Date.init(timeIntervalSince1970:)), fields[2])
        }
        let blobs = try objects(commits.map { "\($0.0):\(path.inRepository)" })
        let key = try historyFingerprintKey()
        var versions: [ItemVersion] = []
        // Oldest first, each compared with the one before it.
        var previous: (entry: VaultStore.Entry, bytes: [UInt8])?
        for (index, commit) in commits.enumerated().reversed() {
            let bytes = blobs[index]
            let entry: VaultStore.Entry?
            do throws(KeychainError) {
                entry = try bytes.map { (bytes) throws(KeychainError) in
                    try decrypt(bytes, at: address, file: "\(commit.0.prefix(12)):\(path.inTree)")
                }
            } catch .noMatchingIdentity, .itemCorrupt {
                // Encrypted before one of our identities was a recipient, or damaged (a conflict
                // committed): listed as such; the next version is compared with the last one read.
                versions.append(
                    ItemVersion(
                        revision: commit.0, date: commit.1, author: commit.2, change: .unreadable, fingerprint: nil))
                continue
            }
            let change: ItemVersion.Change? =
                switch (previous, entry) {
                case (nil, nil): nil
                case (nil, _?): versions.last?.change == .unreadable ? .readable : .created
                case (_?, nil): .deleted
                case (let old?, let new?):
                    old.entry.secret != new.secret
                        ? .valueChanged
                        : old.entry.details != new.details ? .detailsChanged : old.bytes != bytes ? .reencrypted : nil
                }
            previous = entry.map { ($0, bytes ?? []) }
            guard let change else { continue }
            versions.append(
                ItemVersion(
                    revision: commit.0, date: commit.1, author: commit.2, change: change,
                    fingerprint: entry.map { valueFingerprint($0.secret, key: key) }))
        }
        return versions.reversed()
    }

    public func secret(service: ServiceName, key: KeychainKey, at revision: String) throws(KeychainError) -> Data? {
        let address = SecretAddress(service: service, key: key)
        let path = try repositoryPath(address)
        guard revision.first != "-", !revision.contains(where: { $0.isNewline || $0 == ":" }) else {
            throw .invalidName(kind: "revision", reason: "'\(escapedForDisplay(revision))' is not a git revision")
        }
        // Named on cat-file's standard input, never as an argument: a revision is no option.
        let answer = trimmed(
            try runGit(["cat-file", "--batch-check"], input: Array("\(revision)^{commit}\n".utf8))[...])
        let fields = answer.split(separator: " ")
        guard fields.count == 3, fields[1] == "commit" else {
            throw .invalidName(kind: "revision", reason: "git knows no commit '\(escapedForDisplay(revision))'")
        }
        let hash = String(fields[0])
        let name = "\(hash):\(path.inRepository)"
        let found = try objects(signing.verifiesNow ? [name, name + VaultSigning.suffix] : [name])
        guard let bytes = found.first ?? nil else { return nil }
        let file = "\(hash.prefix(12)):\(path.inTree)"
        if signing.verifiesNow {
            // That version as it was signed then, by a signer allowed now.
            try requireSignedRecipients()
            let state = try signatureState(of: bytes, signature: found[1], relative: path.inTree)
            try signing.require(state, what: "\(Self.shown(address)) at \(hash.prefix(12))", path: file)
        }
        return try decrypt(bytes, at: address, file: file).secret
    }

    /// The item's file relative to the vault's directory, and relative to the repository's top.
    private func repositoryPath(_ address: SecretAddress) throws(KeychainError) -> (
        inTree: String, inRepository: String
    ) {
        let relative = try TreeVaultNames.relativePath(service: address.service, key: address.key)
        // Inside a .git directory git answers, but there is no work tree whose commits hold items.
        let answer = try runGit(["rev-parse", "--is-inside-work-tree", "--show-prefix"]).split(
            separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard answer.first.map({ trimmed($0) }) == "true" else {
            throw .noHistory(
                detail: "the tree vault \(quotedPath(directory)) is not in a git work tree, so it has no history")
        }
        let prefix = answer.count > 1 ? trimmed(answer[1]) : ""
        return (relative, prefix + relative)
    }

    /// The contents of each object named (`REV:PATH`), nil for one that is not there (a commit
    /// that deleted the file), from one `git cat-file --batch`.
    private func objects(_ names: [String]) throws(KeychainError) -> [[UInt8]?] {
        guard !names.isEmpty else { return [] }
        let output = try runGit(["cat-file", "--batch"], input: Array(names.map { "\($0)\n" }.joined().utf8))
        var objects: [[UInt8]?] = []
        var index = 0
        while objects.count < names.count, index < output.count {
            guard let end = output[index...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            let header = String(decoding: output[index..<end], as: UTF8.self).split(separator: " ")
            index = end + 1
            guard header.count == 3, header[1] == "blob", let size = Int(header[2]), index + size <= output.count
            else {
                objects.append(nil)  // "NAME missing", or not a file there
                continue
            }
            objects.append(Array(output[index..<index + size]))
            index += size + 1
        }
        guard objects.count == names.count else {
            throw .noHistory(detail: "git cat-file answered \(objects.count) of \(names.count) objects")
        }
        return objects
    }

    /// `bytes` as text without the line breaks and spaces around it.
    private func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        let isSpace = { (byte: UInt8) in byte == 0x0A || byte == 0x0D || byte == 0x20 }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.endIndex
        let end = bytes.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? start
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }

    func runGit(_ arguments: [String], input: [UInt8] = []) throws(KeychainError) -> [UInt8] {
        guard let git else {
            throw .noHistory(detail: "this program reads no git history")
        }
        return try git(arguments, input)
    }

    /// The key of the values' fingerprints: the vault's own (`.fingerprint.age`, opened with the
    /// vault's identities) when it has one, else one of this process alone (fingerprints then
    /// compare within one listing).
    func historyFingerprintKey() throws(KeychainError) -> SymmetricKey {
        try fingerprintKey().map { SymmetricKey(data: $0) } ?? SymmetricKey(size: .bits256)
    }
}
