import ArgumentParser
import KeychainCore

extension KeychainCLI.Vault {
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
        case .signedByUnknown(let fingerprint), .signedByKeyNotAllowedNow(let fingerprint):
            (principals, self.fingerprint, reason) = (nil, fingerprint, state.description)
        case .unsigned, .invalid:
            (principals, fingerprint, reason) = (nil, nil, state.description)
        }
    }
}
