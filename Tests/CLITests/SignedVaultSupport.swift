import Foundation
import TestSupport

/// The real `ssh-keygen` (OpenSSH 9.2).
func sshKeygen(_ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    try runProcess("/usr/bin/ssh-keygen", arguments, stdin: stdin, environment: ["PATH": "/usr/bin:/bin"])
}

/// A signed team tree vault: ``TreeFixture``'s vault, signed by alice (an ed25519 key made by
/// ssh-keygen, the one principal `allowed_signers` lists), and mallory's key, which nobody allowed.
/// Every `keychain-cli` the body starts signs with alice's key and checks against the allowed
/// signers; `required` adds $KEYCHAIN_REQUIRE_SIGNED=1 for one call.
struct SignedTree {
    let tree: TreeFixture
    let alice: String
    let mallory: String
    let allowedSigners: String

    static let required = ["KEYCHAIN_REQUIRE_SIGNED": "1"]
    static let namespace = "keychain-cli-vault"

    var vault: String { tree.vault }
    func item(_ service: String, _ key: String) -> String { tree.item(service, key) }

    static func run(_ body: (SignedTree) throws -> Void) throws {
        try TreeFixture.run { tree in
            let (alice, mallory) = (tree.scratch.path("alice"), tree.scratch.path("mallory"))
            for (key, comment) in [(alice, "alice"), (mallory, "mallory")] {
                let made = try sshKeygen(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", key])
                guard made.status == 0 else { throw FixtureFailed(detail: "ssh-keygen: \(made.stderr)") }
            }
            let allowedSigners = tree.scratch.path("allowed_signers")
            let alicePublic = try String(contentsOfFile: alice + ".pub", encoding: .utf8)
                .split(separator: " ").prefix(2).joined(separator: " ")
            try "alice@example.com \(alicePublic)\n".write(toFile: allowedSigners, atomically: true, encoding: .utf8)
            var environment = CLIBackend.overrides
            environment["KEYCHAIN_SIGNING_KEY"] = alice
            environment["KEYCHAIN_ALLOWED_SIGNERS"] = allowedSigners
            try CLIBackend.$overrides.withValue(environment) {
                let signed = try cli(["vault", "sign"], session: nil)
                guard signed.status == 0 else { throw FixtureFailed(detail: "vault sign: \(signed.stderr)") }
                try body(SignedTree(tree: tree, alice: alice, mallory: mallory, allowedSigners: allowedSigners))
            }
        }
    }

    /// The message the signature of the vault's file `relative` covers, as the docs tell a
    /// shell to make it.
    func message(_ relative: String) throws -> Data {
        let id = try String(contentsOfFile: vault + "/.vault-id", encoding: .utf8).trimmingCharacters(in: .newlines)
        let digest = try runProcess(
            "/usr/bin/sha256sum", [vault + "/" + relative], environment: ["PATH": "/usr/bin:/bin"]
        ).stdoutText.prefix(64)
        return Data("keychain-cli-vault-signature v1\nvault \(id)\nfile \(relative)\nsha256 \(digest)\n".utf8)
    }

    /// An item written with the real age from the public recipients alone: what anyone who can
    /// write the repository can make.
    func forge(_ service: String, _ key: String, secret: String) throws {
        let document =
            #"{"format":"keychain-cli-vault-item","version":1,"service":"\#(service)","key":"\#(key)","#
            + #""encoding":"utf8","secret":"\#(secret)"}"#
        try FileManager.default.createDirectory(atPath: vault + "/" + service, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: item(service, key))
        let made = try runAge(
            ["-e", "-R", vault + "/.recipients", "-o", item(service, key)], stdin: Data(document.utf8))
        guard made.status == 0 else { throw FixtureFailed(detail: "age: \(made.stderr)") }
    }

    /// Copies `from` over `to`, replacing it.
    func copy(_ from: String, over to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }
}
