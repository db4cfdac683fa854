import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct Diff: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say what changed in a tree vault between git revisions, never a value.",
            discussion: """
                No revision: the work tree (untracked items too) against HEAD; one: the work tree \
                against it; two: the first against the second. One line per change: \
                "+ SERVICE/KEY created (value 1a2b…)", "~ SERVICE/KEY value changed (1a2b… → \
                3c4d…)", "~ SERVICE/KEY label changed" (attributes, content type), "~ SERVICE/KEY \
                re-encrypted (recipients changed)", "- SERVICE/KEY deleted", and the recipients \
                added to or removed from .recipients. A value is shown only as its fingerprint \
                (vault textconv). The items are read with the real git and decrypted in memory \
                with your identities. Outside a git work tree, exits 69.

                  keychain-cli --vault secrets vault diff
                  keychain-cli --vault secrets vault diff main feature
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: ArgumentHelp("Up to two git revisions (default: HEAD and the work tree).", valueName: "rev"))
        var revisions: [String] = []

        func validate() throws {
            guard revisions.count <= 2 else { throw ValidationError("give at most two revisions") }
        }

        func run() throws {
            let store = try treeVault(settings, for: "diff")
            _ = try gitWorkTree(of: store.directory)
            for revision in revisions {
                let known = try runGit(
                    ["rev-parse", "--verify", "--quiet", "--end-of-options", "\(revision)^{commit}"],
                    in: store.directory)
                guard !revision.hasPrefix("-"), known.succeeded else {
                    throw CommandFailure.usage("\(quotedValue(revision, expected: "a revision")) is no git revision")
                }
            }
            let old = revisions.first ?? "HEAD"
            let new = revisions.count == 2 ? revisions[1] : nil
            var changes = try changedFiles(store.directory, old: old, new: new)
            if new == nil {
                let untracked = try runGit(
                    ["ls-files", "-z", "--others", "--exclude-standard", "--", "."], in: store.directory)
                for path in untracked.output.split(separator: 0) {
                    changes.append(("A", String(decoding: path, as: UTF8.self)))
                }
            }
            let key = try? store.fingerprintKey()
            var lines: [String] = []
            for (status, path) in changes.sorted(by: { $0.1 < $1.1 }) {
                func version(_ revision: String?) throws -> [UInt8] {
                    guard let revision else {
                        let file = try? readFileIfPresent("\(store.directory)/\(path)", limit: 16 << 20)
                        return file ?? []
                    }
                    let blob = try runGit(["cat-file", "blob", "\(revision):./\(path)"], in: store.directory)
                    return blob.succeeded ? blob.output : []
                }
                let before = status == "A" ? nil : try version(old)
                let after = status == "D" ? nil : try version(new)
                lines += describeChange(path, before: before, after: after, store: store, key: key)
            }
            try writeOutput(Array(lines.map { $0 + "\n" }.joined().utf8))
        }

        /// The files git says differ under the vault, with its status letter, relative to it.
        private func changedFiles(_ directory: String, old: String, new: String?) throws -> [(String, String)] {
            let run = try runGit(
                ["diff", "--relative", "--no-renames", "--name-status", "-z", old] + (new.map { [$0] } ?? [])
                    + ["--", "."], in: directory)
            guard run.succeeded else { throw CommandFailure.io("git diff failed: \(run.reason)") }
            let fields = run.output.split(separator: 0, omittingEmptySubsequences: false).map {
                String(decoding: $0, as: UTF8.self)
            }
            var changes: [(String, String)] = []
            var index = 0
            while index + 1 < fields.count {
                changes.append((String(fields[index].prefix(1)), fields[index + 1]))
                index += 2
            }
            return changes
        }
    }
}

/// The lines `vault diff` prints for the file at `path` (relative to the vault), nil on the side
/// where it does not exist.
private func describeChange(
    _ path: String, before: [UInt8]?, after: [UInt8]?, store: TreeVaultStore, key: [UInt8]?
) -> [String] {
    guard let item = TreeVaultItemPath(path) else {
        let shown = escapedForDisplay(path)
        if path == TreeVaultStore.recipientsFile {
            let old = recipientLines(before ?? [])
            let new = recipientLines(after ?? [])
            return old.filter { !new.contains($0) }.map { "- recipient \($0)" }
                + new.filter { !old.contains($0) }.map { "+ recipient \($0)" }
        }
        if path == TreeVaultStore.fingerprintFile {
            guard let before, let after else {
                return [before == nil ? "+ fingerprint key made" : "- fingerprint key removed"]
            }
            let old = try? store.fingerprintKey(in: before, file: path)
            let new = try? store.fingerprintKey(in: after, file: path)
            return [
                old == nil || new == nil
                    ? "~ fingerprint key changed (cannot be opened with the identities given)"
                    : old == new
                        ? "~ fingerprint key re-encrypted (the same key)" : "~ fingerprint key replaced (a new key)"
            ]
        }
        return [before == nil ? "+ \(shown) added" : after == nil ? "- \(shown) removed" : "~ \(shown) changed"]
    }
    let name = item.shown
    func summary(_ bytes: [UInt8]) -> TreeVaultItemSummary? {
        try? store.summary(of: bytes, at: item.address, file: "\(name).age", fingerprintKey: key)
    }
    func value(_ summary: TreeVaultItemSummary) -> String { summary.fingerprint ?? "no fingerprint key" }
    guard let before else {
        guard let after, let new = summary(after) else { return ["+ \(name) created (cannot be opened here)"] }
        return ["+ \(name) created (value \(value(new)))"]
    }
    guard let after else { return ["- \(name) deleted"] }
    guard let old = summary(before), let new = summary(after) else {
        return ["~ \(name) changed (cannot be opened with the identities given)"]
    }
    var lines: [String] = []
    if !new.sameValue(as: old) { lines.append("~ \(name) value changed (\(value(old)) → \(value(new)))") }
    if new.label != old.label { lines.append("~ \(name) label changed") }
    if new.attributes != old.attributes { lines.append("~ \(name) attributes changed") }
    if new.contentType != old.contentType { lines.append("~ \(name) content type changed") }
    if new.stanzaTypes != old.stanzaTypes {
        lines.append("~ \(name) re-encrypted (recipients changed: \(stanzaLine(new.stanzaTypes)))")
    } else if lines.isEmpty {
        lines.append(
            new.modified != old.modified || new.created != old.created
                ? "~ \(name) written again (same value)" : "~ \(name) re-encrypted")
    }
    return lines
}

/// The recipients a `.recipients` file lists, as lines.
private func recipientLines(_ bytes: [UInt8]) -> [String] {
    String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init).filter {
        !$0.hasPrefix("#") && !$0.allSatisfy(\.isWhitespace)
    }.map(escapedForDisplay)
}
