import ArgumentParser
import Glibc
import KeychainCore

extension KeychainCLI.Vault {
    struct GitSetup: KeychainCommand {
        static let configuration = CommandConfiguration(
            commandName: "git-setup",
            abstract: "Let git merge and diff a tree vault's items with keychain-cli.",
            discussion: """
                Adds "*.age diff=keychain-cli-vault merge=keychain-cli-vault" to DIR/.gitattributes \
                (other lines are kept; running it again changes nothing), and sets, in the local \
                configuration of the repository DIR is in, the merge driver (vault merge-driver: \
                two branches that changed different fields of one item merge clean; both changing \
                one field differently is a conflict that names SERVICE/KEY) and the diff textconv \
                (vault textconv: git diff, git log -p and git show print each item's fields and its \
                value's fingerprint, never the value). Makes the vault's fingerprint key \
                (DIR/.fingerprint.age, encrypted to its recipients) when it has none. git runs \
                both with your environment: give your identity as for every command \
                ($KEYCHAIN_IDENTITY; a passphrase tree vault's passphrase: $KEYCHAIN_PASSPHRASE or \
                a prompt). Nothing decrypted is ever written to a file. Outside a git work tree, \
                exits 69. Each clone runs it once (git does not share its configuration).

                  keychain-cli --vault secrets vault git-setup
                  git add secrets/.gitattributes secrets/.fingerprint.age
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        func run() throws {
            let store = try treeVault(settings, for: "git-setup")
            let top = try gitWorkTree(of: store.directory)
            let attributes = try addGitAttributes(in: store.directory)
            let program = shellQuoted(try ownExecutable())
            let driver = TreeVaultGit.driver
            for (name, value) in [
                ("merge.\(driver).name", "keychain-cli tree vault items, merged field by field"),
                // git expands %O, %A, %B, %P (and %%) in the driver's command, not in textconv's.
                ("merge.\(driver).driver", "\(program.replacing("%", with: "%%")) vault merge-driver -- %O %A %B %P"),
                ("diff.\(driver).textconv", "\(program) vault textconv --"),
                ("diff.\(driver).cachetextconv", "false"),
            ] {
                let set = try runGit(["config", "--local", name, value], in: store.directory)
                guard set.succeeded else {
                    throw CommandFailure.io("git config --local \(name) failed: \(set.reason)")
                }
            }
            let madeKey = try store.makeFingerprintKeyIfMissing()
            warn(
                "\(store.directory): git (in \(quotedPath(top))) now merges and diffs its items with keychain-cli"
                    + (attributes ? "; commit \(TreeVaultGit.attributesFile)" : "")
                    + (madeKey ? " and the new \(TreeVaultStore.fingerprintFile)" : ""))
        }

        /// Adds the line to DIR/.gitattributes unless it is there; true when the file changed.
        private func addGitAttributes(in directory: String) throws -> Bool {
            let path = "\(directory)/\(TreeVaultGit.attributesFile)"
            let old: [UInt8]
            do {
                old = try readFileIfPresent(path, limit: 1 << 20, regular: true) ?? []
            } catch {
                throw CommandFailure.io("\(error). Check the path and its permissions")
            }
            let text = String(decoding: old, as: UTF8.self)
            let lines = text.split(whereSeparator: \.isNewline).map { line in
                line.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            }
            guard !lines.contains(TreeVaultGit.attributesLine) else { return false }
            let separator = text.isEmpty || text.hasSuffix("\n") ? "" : "\n"
            do {
                try writeFileAtomically(path, Array((text + separator + TreeVaultGit.attributesLine + "\n").utf8))
                chmod(path, 0o644)
            } catch {
                throw CommandFailure.io("\(error). Check the path and its permissions")
            }
            return true
        }
    }
}

/// The names git-setup writes and the other git commands read.
enum TreeVaultGit {
    /// The merge and diff drivers' name in .gitattributes and git's configuration.
    static let driver = "keychain-cli-vault"
    static let attributesFile = ".gitattributes"
    static let attributesLine = "*.age diff=\(driver) merge=\(driver)"
}

/// The tree vault of `settings` (--vault, $KEYCHAIN_VAULT); a usage error (64) when the vault is a
/// single file, which `command` is not for.
func treeVault(_ settings: Settings, for command: String) throws -> TreeVaultStore {
    guard let store = try settings.treeVaultStore() else {
        throw CommandFailure.usage(
            "\(quotedPath(try settings.vaultPath())) is not a tree vault: vault \(command) is for a directory "
                + "'keychain-cli vault init DIR' made; give it with --vault DIR or $KEYCHAIN_VAULT")
    }
    _ = try store.recipients()
    return store
}

/// The top of the git work tree `directory` is in.
/// - Throws: ``CommandFailure`` (69) when it is in none.
func gitWorkTree(of directory: String) throws -> String {
    let run = try runGit(["rev-parse", "--show-toplevel"], in: directory)
    let top = String(decoding: run.output, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
    guard run.succeeded, !top.isEmpty else {
        throw CommandFailure.unavailable(
            "\(quotedPath(directory)) is not in a git work tree (git init it, or clone the repository, first)")
    }
    return top
}

/// This program's absolute path, as git is to run it.
func ownExecutable() throws -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { throw CommandFailure.io("cannot tell where keychain-cli is (/proc/self/exe)") }
    return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
