import ArgumentParser
import FoundationEssentials
import KeychainCore
import KeychainHolder

extension KeychainCLI {
    struct History: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the versions of the secret stored under KEY.",
            discussion: """
                A tree vault in git: the commits that changed the item's file, newest first — \
                commit, date, author, what changed (created, value changed, details changed, \
                re-encrypted, deleted) and the value's fingerprint, keyed by the vault's \
                fingerprint key (equal values show equal fingerprints; a value cannot be \
                guessed from one). Each version is read from git's objects and decrypted in \
                memory. OpenBao: the KV version 2 versions of the service's secret in which KEY \
                changed (the mount keeps 10 unless set otherwise), fingerprints keyed for this \
                listing alone. A vault outside git, a single-file vault and the Secret Service \
                keep no versions: exit 69. --json prints an array.

                  keychain-cli --vault secrets -s ci history github-token
                  keychain-cli --vault secrets -s ci rollback github-token --to HEAD~2
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the secret.", completion: .keyNames)
        var key: String

        @Flag(help: "Print a JSON array of versions.")
        var json = false

        func run() throws {
            let key = try KeychainKey(key)
            let keychain = try keychain()
            let versions = try versionedStore(keychain.store, timeout: try settings.resolvedTimeout()).history(
                service: keychain.service, key: key)
            if json { return try writeJSON(versions.map(JSONVersion.init)) }
            let lines = versions.map { version in
                [
                    String(version.revision.prefix(12)),
                    version.date.map { $0.formatted(Date.ISO8601FormatStyle()) } ?? "-",
                    version.change.rawValue,
                    version.fingerprint.map { "fingerprint \($0)" } ?? "-",
                    version.author.map(escapedForDisplay) ?? "",
                ].joined(separator: "\t")
            }
            try writeOutput(Array(lines.map { $0 + "\n" }.joined().utf8))
        }
    }
}

/// A version as `history --json` prints it.
private struct JSONVersion: Encodable {
    var revision: String
    var date: Date?
    var author: String?
    var change: String
    var fingerprint: String?

    init(_ version: ItemVersion) {
        (revision, date, author, change, fingerprint) = (
            version.revision, version.date, version.author, version.change.rawValue, version.fingerprint
        )
    }
}

/// `store` as one that keeps versions (a tree vault reading git; the vault itself when it came
/// through `unlock`'s holder, which keeps no history); else the unavailable failure (69) that
/// says which do.
func versionedStore(_ store: any SecretStore, timeout: Double) throws -> any VersionedSecretStore {
    let store = (store as? HeldVaultStore)?.direct ?? store
    if let tree = store as? TreeVaultStore {
        return tree.reading(git: gitRunner(directory: tree.directory, timeout: timeout))
    }
    if let versioned = store as? any VersionedSecretStore { return versioned }
    throw KeychainError.noHistory(
        detail: store is SecretServiceStore
            ? "the Secret Service keeps no earlier versions of an item"
            : "a single-file vault keeps no history")
}
