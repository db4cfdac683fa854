import ArgumentParser
import KeychainCore

extension KeychainCLI.Vault {
    struct Sign: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign the vault as it is now, once an allowed signer reviewed it.",
            discussion: """
                Signs, with --signing-key or $KEYCHAIN_SIGNING_KEY (an OpenSSH ed25519 private \
                key, or the .pub of a key an ssh-agent holds), a tree vault's .recipients and \
                every item whose signature is not an allowed signer's (each SERVICE/KEY.age.sig), \
                or a vault file whole (PATH.sig); a tree without an id gets one (.vault-id). It \
                reads no secret, so the signer need not be a recipient. Review what changed first \
                (keychain-cli vault diff, git log -p): a signature says that an allowed signer \
                vouches for the file as it is. With --allowed-signers, the key must be one it lists. \
                After a merge in which both sides changed one item, sign the merged item again. \
                See docs/backends/vault.md, "Signed vaults".

                  keychain-cli --vault secrets --signing-key ~/.ssh/id_ed25519 vault sign
                  SSH_AUTH_SOCK=… keychain-cli --vault secrets --signing-key key.pub vault sign
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        func run() throws {
            let settings = settings
            guard try settings.vaultSigning().signs else {
                throw CommandFailure.usage(
                    "vault sign needs a signing key: --signing-key PATH or $KEYCHAIN_SIGNING_KEY")
            }
            if let tree = try settings.treeVaultStore() {
                let (signed, already) = try tree.signAll()
                return warn(
                    "\(tree.directory): signed \(signed) file\(signed == 1 ? "" : "s")"
                        + (already > 0 ? "; \(already) already signed by an allowed signer" : ""))
            }
            let store = try settings.vaultStore()
            guard try store.signatureReport() != nil else {
                throw CommandFailure.notFound("there is no vault at \(store.path) to sign")
            }
            warn(
                try store.signAll()
                    ? "\(store.path): signed" : "\(store.path): already signed by an allowed signer")
        }
    }

    struct Verify: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whose signature each of the vault's files carries.",
            discussion: """
                Checks a tree vault's .recipients and every item (or a vault file) against the \
                allowed signers (--allowed-signers or $KEYCHAIN_ALLOWED_SIGNERS) and prints one \
                line each: SERVICE/KEY, then "signed by PRINCIPALS (SHA256:…)", or why not \
                (unsigned; signed by a key no allowed signer has; a signature of other content, \
                another name or another vault). Exits 0 when every file is signed by an allowed \
                signer, 77 otherwise. --json prints an array of {file, path, signed, principals, \
                fingerprint, reason}.

                  keychain-cli --vault secrets --allowed-signers ci/allowed_signers vault verify
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Flag(help: "Print a JSON array instead of lines.")
        var json = false

        func run() throws {
            let settings = settings
            guard try settings.allowedSignersFile() != nil else {
                throw CommandFailure.usage(
                    "vault verify needs to know who may sign: --allowed-signers PATH or $KEYCHAIN_ALLOWED_SIGNERS")
            }
            let report: [(what: String, path: String, state: SignatureState)]
            if let tree = try settings.treeVaultStore() {
                report = try tree.signatureReport()
            } else {
                let store = try settings.vaultStore()
                guard let (path, state) = try store.signatureReport() else {
                    throw CommandFailure.notFound("there is no vault at \(store.path)")
                }
                report = [("the vault", path, state)]
            }
            if json {
                try writeJSON(report.map { JSONSignature(what: $0.what, path: $0.path, state: $0.state) })
            } else {
                try writeOutput(Array(report.map { "\($0.what): \($0.state)\n" }.joined().utf8))
            }
            let refused = report.filter { !$0.state.isAllowed }.count
            guard refused == 0 else {
                throw CommandFailure(
                    kind: .denied,
                    message:
                        "\(refused) of \(report.count) file\(report.count == 1 ? "" : "s") not signed by an allowed signer"
                )
            }
        }
    }
}

/// A file's signature as `vault verify --json` prints it.
private struct JSONSignature: Encodable {
    let file: String
    let path: String
    let signed: Bool
    let principals: [String]?
    let fingerprint: String?
    let reason: String?

    init(what: String, path: String, state: SignatureState) {
        (file, self.path, signed) = (what, path, state.isAllowed)
        switch state {
        case .signed(let principals, let fingerprint):
            (self.principals, self.fingerprint, reason) = (principals, fingerprint, nil)
        case .signedByUnknown(let fingerprint):
            (principals, self.fingerprint, reason) = (nil, fingerprint, state.description)
        case .unsigned, .invalid:
            (principals, fingerprint, reason) = (nil, nil, state.description)
        }
    }
}
