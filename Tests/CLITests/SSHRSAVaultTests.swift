import Foundation
import TestSupport
import Testing

private func run(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
    try runProcess(executable, arguments, environment: ["PATH": "/usr/bin:/bin"])
}

/// age's ssh-rsa recipients and identities against the real age 1.1.1 and ssh-keygen, both ways,
/// in a vault file and a tree vault; an encrypted RSA key opens with its passphrase.
@Suite("Team vaults: ssh-rsa recipients and identities")
struct SSHRSAVaultTests {
    /// An RSA key (3072 bits, ssh-keygen's default), unencrypted, and a passphrase-protected copy.
    private struct Keys {
        let scratch: ScratchDirectory
        let key: String
        let locked: String

        init() throws {
            scratch = try ScratchDirectory("rsa")
            key = scratch.path("id_rsa")
            #expect(
                try run("/usr/bin/ssh-keygen", ["-q", "-t", "rsa", "-N", "", "-C", "rsa@ci", "-f", key]).status == 0)
            locked = scratch.path("locked_rsa")
            try FileManager.default.copyItem(atPath: key, toPath: locked)
            try FileManager.default.copyItem(atPath: key + ".pub", toPath: locked + ".pub")
            #expect(try run("/usr/bin/ssh-keygen", ["-q", "-p", "-P", "", "-N", "rsa pass", "-f", locked]).status == 0)
        }

        func cli(_ arguments: [String], vault: String, _ extra: [String: String] = [:], stdin: Data? = nil) throws
            -> ProcessResult
        {
            try TestSupport.cli(
                arguments, stdin: stdin, session: nil,
                extra: ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault, "HOME": scratch.path("home")]
                    .merging(extra) { $1 })
        }
    }

    /// `age -R id_rsa.pub` wrote it: the key opens it, unencrypted or (its passphrase given)
    /// encrypted; a wrong passphrase is 77.
    @Test func aVaultAgeEncryptedToAnRSAKeyOpensWithTheKey() throws {
        let keys = try Keys()
        defer { keys.scratch.remove() }
        let document = keys.scratch.path("document.json")
        try Data(
            #"{"format":"keychain-cli-vault","version":1,"items":[{"service":"ci","key":"k","encoding":"utf8","secret":"rsa-from-age"}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: document))
        let vault = keys.scratch.path("team.age")
        let encrypted = try run("/usr/bin/age", ["-R", keys.key + ".pub", "-o", vault, document])
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        #expect(
            String(decoding: try Data(contentsOf: URL(fileURLWithPath: vault)), as: UTF8.self).contains("-> ssh-rsa "))
        let plain = try keys.cli(["--identity", keys.key, "-s", "ci", "get", "k"], vault: vault)
        #expect(plain.status == 0 && plain.stdoutText == "rsa-from-age", "\(plain.stderr)")
        let locked = try keys.cli(
            ["-s", "ci", "get", "k"], vault: vault,
            ["KEYCHAIN_IDENTITY": keys.locked, "KEYCHAIN_KEY_PASSPHRASE": "rsa pass"])
        #expect(locked.status == 0 && locked.stdoutText == "rsa-from-age", "\(locked.stderr)")
        let wrong = try keys.cli(
            ["-s", "ci", "get", "k"], vault: vault, ["KEYCHAIN_IDENTITY": keys.locked, "KEYCHAIN_KEY_PASSPHRASE": "no"])
        #expect(wrong.status == 77 && wrong.stderr.contains("is not opened by the passphrase"), "\(wrong.stderr)")
        // Another RSA key: not one of its recipients.
        let other = keys.scratch.path("other_rsa")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "rsa", "-N", "", "-f", other]).status == 0)
        let stranger = try keys.cli(["--identity", other, "-s", "ci", "get", "k"], vault: vault)
        #expect(stranger.status == 77 && stranger.stderr.contains("none of the identities"), "\(stranger.stderr)")
    }

    /// A vault file re-keyed to a recipients file of an ssh-rsa and an ssh-ed25519 line, and a tree
    /// vault made for the ssh-rsa key: what we write, `age -d -i id_rsa` opens.
    @Test func whatWeWriteToAnRSARecipientStockAgeOpens() throws {
        let keys = try Keys()
        defer { keys.scratch.remove() }
        let ed25519 = keys.scratch.path("id_ed25519")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", ed25519]).status == 0)
        let recipients = keys.scratch.path("recipients.txt")
        let lines = try [keys.key, ed25519].map { try String(contentsOfFile: $0 + ".pub", encoding: .utf8) }
        try Data(("# the team\n" + lines.joined()).utf8).write(to: URL(fileURLWithPath: recipients))
        let vault = keys.scratch.path("team.age")
        let added = try keys.cli(["vault", "recipients", "add", recipients], vault: vault)
        #expect(added.status == 0, "\(added.stderr)")
        let listed = try keys.cli(["vault", "recipients", "list"], vault: vault, ["KEYCHAIN_IDENTITY": keys.key])
        #expect(
            listed.stdoutText.hasPrefix("ssh-rsa AAAA") && listed.stdoutText.contains("rsa@ci"), "\(listed.stdoutText)")
        let write = try keys.cli(
            ["-s", "ci", "set", "k"], vault: vault, ["KEYCHAIN_IDENTITY": ed25519], stdin: Data("written-rsa".utf8))
        #expect(write.status == 0, "\(write.stderr)")
        let opened = try run("/usr/bin/age", ["-d", "-i", keys.key, vault])
        #expect(opened.status == 0 && opened.stdoutText.contains("written-rsa"), "\(opened.stderr)")
        let tree = keys.scratch.path("tree")
        #expect(try keys.cli(["vault", "init", "--recipient", keys.key + ".pub"], vault: tree).status == 0)
        let treeWrite = try keys.cli(
            ["-s", "ci", "set", "t"], vault: tree, ["KEYCHAIN_IDENTITY": keys.locked], stdin: Data("tree-rsa".utf8))
        #expect(treeWrite.status == 0, "\(treeWrite.stderr)")
        let item = try run("/usr/bin/age", ["-d", "-i", keys.key, tree + "/ci/t.age"])
        #expect(item.status == 0 && item.stdoutText.contains("tree-rsa"), "\(item.stderr)")
        let back = try keys.cli(
            ["-s", "ci", "get", "t"], vault: tree,
            ["KEYCHAIN_IDENTITY": keys.locked, "KEYCHAIN_KEY_PASSPHRASE": "rsa pass"])
        #expect(back.stdoutText == "tree-rsa", "\(back.stderr)")
    }
}

/// `unlock` with an encrypted RSA key: a vault file is held (its file key), a tree vault's ssh-rsa
/// identity is not (64, saying to give it to each command).
@Suite("Team vaults: unlock with an ssh-rsa identity")
struct SSHRSAUnlockTests {
    @Test func aVaultFileIsHeldATreeVaultsRSAIdentityIsNot() throws {
        let scratch = try ScratchDirectory("rsa-unlock")
        defer { scratch.remove() }
        let key = scratch.path("id_rsa")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "rsa", "-N", "rsa pass", "-f", key]).status == 0)
        let place = try UnlockPlace()
        defer { place.finish() }
        let vault = ["KEYCHAIN_VAULT": scratch.path("team.age")]
        let given = vault.merging(["KEYCHAIN_IDENTITY": key, "KEYCHAIN_KEY_PASSPHRASE": "rsa pass"]) { $1 }
        #expect(try place.run(["vault", "recipients", "add", key + ".pub"], extra: vault).status == 0)
        #expect(try place.run(["set", "k"], stdin: Data("rsa-held".utf8), extra: given).status == 0)
        let unlocked = try place.run(["unlock"], extra: given)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let bare = try place.run(["get", "k"], extra: vault)
        #expect(bare.status == 0 && bare.stdoutText == "rsa-held", "\(bare.stderr)")
        let tree = ["KEYCHAIN_VAULT": scratch.path("tree")]
        #expect(try place.run(["vault", "init", "--recipient", key + ".pub"], extra: tree).status == 0)
        let refused = try place.run(["unlock"], extra: given.merging(tree) { $1 })
        #expect(refused.status == 64 && refused.stderr.contains("give it to each command"), "\(refused.stderr)")
    }
}
