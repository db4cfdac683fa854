import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct Textconv: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a tree vault's item file as text for git diff (vault git-setup sets it).",
            discussion: """
                git runs it as its textconv for DIR/**/*.age: one line per field (service, key, \
                label, content type, each attribute, created, modified), the value's fingerprint \
                (HMAC-SHA256 under the vault's fingerprint key, 16 hex digits: a changed value \
                changes it, equal values share it, the value is never printed) and the recipient \
                stanzas of its age header, so that git diff, git log -p and git show say what \
                changed. The file is decrypted in memory with your identities; one they do not \
                open is printed as a line saying so (exit 0, so that git still shows a diff). The \
                fingerprint key is that of --vault or $KEYCHAIN_VAULT, else of the vault the file \
                is in, else of the one vault of the git work tree.
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: ArgumentHelp("The item file (git gives a copy of the version to show).", valueName: "file"))
        var file: String

        func run() throws {
            let bytes: [UInt8]
            do {
                guard let read = try readFileIfPresent(file, limit: 16 << 20) else {
                    throw CommandFailure.io("\(quotedPath(file)) does not exist. Check the path")
                }
                bytes = read
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure.io("\(error). Check the path and its permissions")
            }
            // git shows nothing of a file whose textconv fails: a vault or an identity that cannot
            // be read is said on stderr, and the file is still described as far as it can be.
            var vault: TreeVaultStore?
            var given: [VaultIdentity] = []
            do {
                vault = try fingerprintVault(settings, near: file)
                given = vault == nil ? try identities(settings, vault: file) : []
            } catch {
                warn("vault textconv: \(failureMessage(error) ?? "\(error)")")
            }
            let store =
                vault
                ?? TreeVaultStore(
                    directory: ".", identities: given,
                    passphrase: settings.passphraseSource(vault: file, newPassphrase: nil))
            let key = vault.flatMap { try? $0.fingerprintKey() }
            try writeOutput(Array(describe(bytes, file: file, store: store, fingerprintKey: key).utf8))
        }
    }
}

/// The lines git's textconv prints for the item file `bytes`: never its value.
func describe(_ bytes: [UInt8], file: String, store: TreeVaultStore, fingerprintKey: [UInt8]?) -> String {
    guard let stanzas = TreeVaultStore.stanzaTypes(of: bytes) else {
        return "not an age file (\(bytes.count) bytes)\n"
    }
    // git names its copy of a blob …_NAME: the vault's own files are told by their names.
    if file.hasSuffix(TreeVaultStore.fingerprintFile) || file.hasSuffix(TreeVaultStore.identityFile) {
        let what = file.hasSuffix(TreeVaultStore.identityFile) ? "the vault's identity" : "the fingerprint key"
        return "\(what) (encrypted, never shown)\nrecipients: \(stanzaLine(stanzas))\n"
    }
    guard let summary = try? store.summary(of: bytes, file: "the item", fingerprintKey: fingerprintKey) else {
        return "encrypted: it cannot be opened with the identities given (or it is not a vault item)\n"
            + "recipients: \(stanzaLine(stanzas))\n"
    }
    var lines = [
        "service: \(escapedForDisplay(summary.service))", "key: \(escapedForDisplay(summary.key))",
        "value: \(summary.fingerprint.map { "fingerprint \($0)" } ?? "no fingerprint key (run vault git-setup)")",
    ]
    if let label = summary.label { lines.append("label: \(escapedForDisplay(label))") }
    if let type = summary.contentType { lines.append("content type: \(escapedForDisplay(type))") }
    for (name, value) in (summary.attributes ?? [:]).sorted(by: { $0.key < $1.key }) {
        lines.append("attribute: \(escapedForDisplay(name))=\(escapedForDisplay(value))")
    }
    lines.append("created: \(summary.created.map(timestamp) ?? "unknown")")
    lines.append("modified: \(summary.modified.map(timestamp) ?? "unknown")")
    lines.append("recipients: \(stanzaLine(summary.stanzaTypes))")
    return lines.map { $0 + "\n" }.joined()
}

/// `3 stanzas (X25519×2, ssh-ed25519×1)`.
func stanzaLine(_ types: [String]) -> String {
    var counts: [String: Int] = [:]
    for type in types { counts[type, default: 0] += 1 }
    let parts = counts.sorted { $0.key < $1.key }.map { "\(escapedForDisplay($0.key))×\($0.value)" }
    return "\(types.count) stanza\(types.count == 1 ? "" : "s") (\(parts.joined(separator: ", ")))"
}

private func timestamp(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle()) }

/// The tree vault whose fingerprint key fingerprints `file`: --vault or $KEYCHAIN_VAULT when it
/// is a tree vault, else the vault `file` is in, else the one vault git lists in the work tree
/// (git runs textconv at its top); nil when none is found, or several.
func fingerprintVault(_ settings: Settings, near file: String) throws -> TreeVaultStore? {
    func store(_ directory: String) throws -> TreeVaultStore? {
        guard access("\(directory)/\(TreeVaultStore.recipientsFile)", F_OK) == 0 else { return nil }
        var settings = settings
        settings.vault = directory
        return try settings.treeVaultStore()
    }
    let given = try settings.vault != nil || environment("KEYCHAIN_VAULT") != nil
    if given, TreeVaultStore.isTree(try settings.vaultPath()) {
        return try store(try settings.vaultPath())
    }
    if let item = TreeVaultItemPath(file), let found = try store(item.directory) { return found }
    guard
        let listed = try? runGit(
            ["ls-files", "-z", "--", ":(glob)**/\(TreeVaultStore.fingerprintFile)"], in: ".", limit: 1 << 20),
        listed.succeeded
    else { return nil }
    let paths = listed.output.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    guard paths.count == 1 else { return nil }
    return try store(splitPath(paths[0]).directory)
}
