import Foundation
import Glibc
import TestSupport
import Testing

/// age plugins with the real age 1.1.1 and a plugin written from the spec (Tests/plugins).
@Suite("Age plugins: age1NAME1… recipients and AGE-PLUGIN-NAME-1… identities")
struct AgePluginTests {
    /// Stock age encrypts to the plugin's recipient and an X25519 one; we open the file vault
    /// with either identity; our re-key to the plugin (vault recipients) is opened by stock age.
    @Test func aFileVaultMadeByStockAgeOpensWithThePluginAndOurWritesOpenWithStockAge() throws {
        let scratch = try ScratchDirectory("plugin-file")
        defer { scratch.remove() }
        let plugin = try KCTest.key("n", in: scratch, name: "plugin.txt")
        let x25519 = try KCTest.x25519(in: scratch, name: "x25519.txt")
        let document = scratch.path("document.json")
        try CLIBackend.withVault { _ throws in
            #expect(try cli(["-s", "ci", "set", "token"], input: "from-age").status == 0)
            #expect(try cli(["-s", "ci", "export", "--yes", "-o", document]).status == 0)
        }
        let vault = scratch.path("team.age")
        let made = try KCTest.age(["-r", plugin.recipient, "-r", x25519.recipient, "-o", vault, document], scratch)
        #expect(made.status == 0, "\(made.stderr)")
        for identity in [plugin.identity, x25519.identity] {
            let got = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: identity, scratch)
            #expect(got.status == 0 && got.stdoutText == "from-age", "\(got.stderr)")
        }
        // A second plugin key added: the re-key wraps the new file key in one session for both.
        let second = try KCTest.key("n", in: scratch, name: "second.txt")
        try FileManager.default.removeItem(atPath: scratch.path("plugin.log"))
        let added = try KCTest.cli(
            ["vault", "recipients", "add", plugin.recipient, x25519.recipient, second.recipient], vault: vault,
            identity: plugin.identity, scratch)
        #expect(added.status == 0, "\(added.stderr)")
        let wraps = KCTest.sessions(scratch).filter { $0.machine == "recipient-v1" }
        #expect(wraps.count == 1 && wraps[0].first == 2 && wraps[0].second == 1, "\(wraps)")
        let written = try KCTest.cli(
            ["-s", "ci", "set", "later"], vault: vault, identity: second.identity, stdin: "ours", scratch)
        #expect(written.status == 0, "\(written.stderr)")
        for identity in [second.identity, plugin.identity, x25519.identity] {
            let opened = try KCTest.age(["-d", "-i", identity, vault], scratch)
            #expect(opened.status == 0 && opened.stdoutText.contains("\"ours\""), "\(opened.stderr)")
        }
    }

    /// A tree vault for a plugin recipient beside an X25519 one: each item file is wrapped in one
    /// session of the plugin (both of its recipients, one file key), stock age opens the items
    /// with the plugin's identity, and we open them with either identity.
    @Test func aTreeVaultForAPluginAndAnX25519RecipientOpensWithEitherAndWithStockAge() throws {
        let scratch = try ScratchDirectory("plugin-tree")
        defer { scratch.remove() }
        let plugin = try KCTest.key("n", in: scratch, name: "plugin.txt")
        let other = try KCTest.key("n", in: scratch, name: "other.txt")
        let x25519 = try KCTest.x25519(in: scratch, name: "x25519.txt")
        let vault = scratch.path("tree")
        let made = try KCTest.cli(
            [
                "vault", "init", "--recipient", plugin.recipient, "--recipient", other.recipient, "--recipient",
                x25519.recipient,
            ], vault: vault,
            scratch)
        #expect(made.status == 0, "\(made.stderr)")
        let set = try KCTest.cli(
            ["-s", "ci", "set", "token"], vault: vault, identity: plugin.identity, stdin: "tree-secret", scratch)
        #expect(set.status == 0, "\(set.stderr)")
        let wraps = KCTest.sessions(scratch).filter { $0.machine == "recipient-v1" }
        #expect(!wraps.isEmpty && wraps.allSatisfy { $0.first == 2 && $0.second == 1 }, "\(wraps)")
        let item = scratch.path("tree/ci/token.age")
        for identity in [plugin.identity, other.identity] {
            let opened = try KCTest.age(["-d", "-i", identity, item], scratch)
            #expect(opened.status == 0 && opened.stdoutText.contains("tree-secret"), "\(opened.stderr)")
        }
        for identity in [plugin.identity, x25519.identity] {
            let got = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: identity, scratch)
            #expect(got.status == 0 && got.stdoutText == "tree-secret", "\(got.stderr)")
        }
        // An item stock age encrypted to the plugin (as a teammate's age -R .recipients would).
        let plain = scratch.path("plain.json")
        try FileManager.default.copyItem(atPath: item, toPath: scratch.path("copy.age"))
        let decrypted = try KCTest.age(["-d", "-i", x25519.identity, "-o", plain, item], scratch)
        #expect(decrypted.status == 0, "\(decrypted.stderr)")
        try FileManager.default.removeItem(atPath: item)
        let again = try KCTest.age(["-R", scratch.path("tree/.recipients"), "-o", item, plain], scratch)
        #expect(again.status == 0, "\(again.stderr)")
        let got = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: other.identity, scratch)
        #expect(got.status == 0 && got.stdoutText == "tree-secret", "\(got.stderr)")
    }

    /// A plugin that asks for a PIN (not echoed), a public value or a confirmation is answered on
    /// the terminal; without a terminal, the command fails (77) saying that the plugin needs one.
    @Test(arguments: [
        ("a", "PIN for the kctest key", "1234"), ("p", "Name of the kctest key", "kc"),
        ("c", "Use the kctest key?", "y"),
    ])
    func aPluginsQuestionIsAskedOnTheTerminalAndFailsWithoutOne(mode: String, prompt: String, answer: String) throws {
        let scratch = try ScratchDirectory("plugin-ask")
        defer { scratch.remove() }
        let plugin = try KCTest.key(mode, recipientMode: "n", in: scratch, name: "plugin.txt")
        let x25519 = try KCTest.x25519(in: scratch, name: "x25519.txt")
        let vault = scratch.path("tree")
        let made = try KCTest.cli(
            ["vault", "init", "--recipient", plugin.recipient, "--recipient", x25519.recipient], vault: vault, scratch)
        #expect(made.status == 0, "\(made.stderr)")
        let set = try KCTest.cli(
            ["-s", "ci", "set", "token"], vault: vault, identity: x25519.identity, stdin: "asked-secret", scratch)
        #expect(set.status == 0, "\(set.stderr)")
        let got = try KCTest.atTerminal(
            ["--backend", "vault", "--vault", vault, "--identity", plugin.identity, "-s", "ci", "get", "token"],
            prompt: prompt, answer: answer, scratch)
        #expect(got.status == 0 && got.stdoutText.contains("asked-secret"), "\(got.stdoutText)")
        #expect(got.stdoutText.contains("age-plugin-kctest: \(prompt)"), "\(got.stdoutText)")
        if mode == "a" { #expect(!got.stdoutText.contains(answer), "the PIN was echoed: \(got.stdoutText)") }
        let alone = try KCTest.cli(["-s", "ci", "get", "token"], vault: vault, identity: plugin.identity, scratch)
        #expect(alone.status == 77, "\(alone.stderr)")
        #expect(
            alone.stderr.contains("age-plugin-kctest") && alone.stderr.contains("needs a terminal"), "\(alone.stderr)")
    }
}
