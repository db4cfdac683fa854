import Foundation
import TestSupport
import Testing

/// The attacks on a team vault that docs/security.md names, each refused with 77 once reads
/// require signatures, no secret used: `get` prints nothing, `exec` starts nothing, `export` and
/// `inject` write nothing.
@Suite("Signed vaults: the attacks on a team vault, refused")
struct SignedVaultAttackTests {
    /// Runs every reading command on `SERVICE/KEY` with signatures required, and expects each to
    /// refuse with 77 naming `named`, with nothing on standard output and no command run.
    func expectRefused(_ signed: SignedTree, _ service: String, _ key: String, naming named: String) throws {
        let get = try cli(["-s", service, "get", key], extra: SignedTree.required)
        #expect(get.status == 77 && get.stdout.isEmpty && get.stderr.contains(named), "\(get.stderr)")
        let marker = signed.tree.scratch.path("ran")
        let exec = try cli(
            ["-s", service, "exec", "--env", "V=\(key)", "--", "/bin/sh", "-c", "touch \(marker)"],
            extra: SignedTree.required)
        #expect(exec.status == 77 && !FileManager.default.fileExists(atPath: marker), "\(exec.stderr)")
        let exported = signed.tree.scratch.path("exported.env")
        let export = try cli(
            ["-s", service, "export", "--format", "env", "--yes", "-o", exported], extra: SignedTree.required)
        #expect(export.status == 77 && !FileManager.default.fileExists(atPath: exported), "\(export.stderr)")
        let injected = try cli(
            ["inject"], stdin: Data("v={{ keychain://\(service)/\(key) }}\n".utf8), extra: SignedTree.required)
        #expect(injected.status == 77 && injected.stdout.isEmpty, "\(injected.stderr)")
    }

    @Test func aForgedItemMadeWithAgeFromThePublicRecipientsIsRefused() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "real").status == 0)
            try signed.forge("ci", "token", secret: "FORGED-VALUE")
            try expectRefused(signed, "ci", "token", naming: "ci/token")
            // A forged item where there was none has no signature at all.
            try signed.forge("ci", "planted", secret: "FORGED-VALUE")
            let planted = try cli(["-s", "ci", "get", "planted"], extra: SignedTree.required)
            #expect(planted.status == 77 && planted.stderr.contains("not signed"), "\(planted.stderr)")
            #expect(!planted.stderr.contains("FORGED"))
            // Without --require-signed the forgery reads: the reason to require it. (A writer that
            // signs, given the allowed signers, checks as if required.)
            #expect(
                try cli(["-s", "ci", "get", "planted"], extra: ["KEYCHAIN_SIGNING_KEY": ""]).stdoutText
                    == "FORGED-VALUE")
            #expect(try cli(["-s", "ci", "get", "planted"]).status == 77)
        }
    }

    @Test func aRecipientAddedByEditingTheListIsRefusedBeforeAnySecretIsWrittenToIt() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "real").status == 0)
            let before = try Data(contentsOf: URL(fileURLWithPath: signed.item("ci", "token")))
            let eve = try cli(["vault", "keygen", "-o", signed.tree.scratch.path("eve.txt")], session: nil).stdoutText
            let list = signed.vault + "/.recipients"
            try (try String(contentsOfFile: list, encoding: .utf8) + eve).write(
                toFile: list, atomically: true, encoding: .utf8)
            let read = try cli(["-s", "ci", "get", "token"], extra: SignedTree.required)
            #expect(read.status == 77 && read.stderr.contains("recipients list") && read.stdout.isEmpty)
            for write in [["set", "token"], ["set", "other"]] {
                let written = try cli(["-s", "ci"] + write, stdin: Data("NEW-VALUE".utf8), extra: SignedTree.required)
                #expect(written.status == 77 && written.stderr.contains("recipients list"), "\(written.stderr)")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: signed.item("ci", "token"))) == before)
            #expect(!FileManager.default.fileExists(atPath: signed.item("ci", "other")))
            // The list an allowed signer signs is trusted again.
            #expect(try cli(["vault", "sign"]).status == 0)
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "real")
        }
    }

    /// An allowed signer's write never vouches for a forgery, even without --require-signed: it
    /// checks the recipients it encrypts to and every item it re-encrypts and signs again.
    @Test func aSigningWriteNeverLaundersAForgery() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "real").status == 0)
            let list = signed.vault + "/.recipients"
            let original = try String(contentsOfFile: list, encoding: .utf8)
            let eve = try cli(["vault", "keygen", "-o", signed.tree.scratch.path("eve.txt")], session: nil).stdoutText
            try (original + eve).write(toFile: list, atomically: true, encoding: .utf8)
            let set = try cli(["-s", "ci", "set", "other"], stdin: Data("NEW-VALUE".utf8))
            #expect(set.status == 77 && set.stderr.contains("recipients list"), "\(set.stderr)")
            #expect(!FileManager.default.fileExists(atPath: signed.item("ci", "other")))
            try original.write(toFile: list, atomically: true, encoding: .utf8)
            // A forged item is not re-encrypted and signed by a recipients change.
            try signed.forge("ci", "planted", secret: "FORGED")
            let bob = try cli(["vault", "keygen", "-o", signed.tree.scratch.path("bob.txt")], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            let add = try cli(["vault", "recipients", "add", bob])
            #expect(add.status == 77 && add.stderr.contains("ci/planted"), "\(add.stderr)")
            #expect(try String(contentsOfFile: list, encoding: .utf8) == original)
            #expect(!FileManager.default.fileExists(atPath: signed.item("ci", "planted") + ".sig"))
            // Overwriting the forgery with a signed value is no laundering: that is allowed.
            #expect(try cli(["-s", "ci", "set", "planted"], input: "fixed").status == 0)
            #expect(try cli(["-s", "ci", "get", "planted"], extra: SignedTree.required).stdoutText == "fixed")
        }
    }

    @Test func aSignedItemCopiedOverAnotherKeyIsRefused() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "staging"], input: "staging-value").status == 0)
            #expect(try cli(["-s", "ci", "set", "production"], input: "production-value").status == 0)
            for suffix in ["", ".sig"] {
                try signed.copy(signed.item("ci", "staging") + suffix, over: signed.item("ci", "production") + suffix)
            }
            try expectRefused(signed, "ci", "production", naming: "ci/production")
        }
    }

    @Test func anItemOfAnotherVaultSignedByTheSameSignerIsRefused() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "ours").status == 0)
            // A second vault, same recipients, same signer: its own id.
            let other = signed.tree.scratch.path("other")
            let made = try cli(["vault", "init", other, "--recipient", signed.tree.recipient])
            #expect(made.status == 0, "\(made.stderr)")
            #expect(try cli(["--vault", other, "-s", "ci", "set", "token"], input: "theirs").status == 0)
            #expect(try cli(["--vault", other, "-s", "ci", "get", "token"], extra: SignedTree.required).status == 0)
            for suffix in ["", ".sig"] {
                try signed.copy(other + "/ci/token.age" + suffix, over: signed.item("ci", "token") + suffix)
            }
            try expectRefused(signed, "ci", "token", naming: "ci/token")
        }
    }

    /// Not caught, and documented so: each file is signed alone, so an older version an allowed
    /// signer signed, put back with its signature, verifies. (git's history and review show it.)
    @Test func anOlderSignedVersionRestoredOverANewerOneIsNotCaught() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "old").status == 0)
            let saved = signed.tree.scratch.path("saved")
            try FileManager.default.createDirectory(atPath: saved, withIntermediateDirectories: true)
            for suffix in ["", ".sig"] {
                try signed.copy(signed.item("ci", "token") + suffix, over: saved + "/t" + suffix)
            }
            #expect(try cli(["-s", "ci", "set", "token"], input: "new").status == 0)
            for suffix in ["", ".sig"] {
                try signed.copy(saved + "/t" + suffix, over: signed.item("ci", "token") + suffix)
            }
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "old")
        }
    }

    @Test func aSignatureByAKeyNobodyAllowedIsRefusedAndSuchAKeySignsNothing() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "real").status == 0)
            let mallory = ["KEYCHAIN_SIGNING_KEY": signed.mallory]
            let write = try cli(["-s", "ci", "set", "token"], stdin: Data("NEW".utf8), extra: mallory)
            #expect(write.status == 77 && write.stderr.contains("allowed signers"), "\(write.stderr)")
            // Mallory signs her forgery herself, without the allowed signers to stop her.
            try signed.forge("ci", "token", secret: "FORGED")
            let sign = try cli(["vault", "sign"], extra: mallory.merging(["KEYCHAIN_ALLOWED_SIGNERS": ""]) { $1 })
            #expect(sign.status == 0, "\(sign.stderr)")
            let read = try cli(["-s", "ci", "get", "token"], extra: SignedTree.required)
            #expect(read.status == 77 && read.stderr.contains("no allowed signer"), "\(read.stderr)")
        }
    }

    /// serve hands a Secret Service client nothing an allowed signer did not sign: it does not
    /// start on a vault holding a forgery (77, naming it), and one planted while it serves is
    /// never handed out.
    @Test func serveGivesItsClientsNoForgedSecret() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "signed-value").status == 0)
            let document =
                #"{"format":"keychain-cli-vault-item","version":1,"service":"ci","key":"planted","#
                + #""encoding":"utf8","secret":"FORGED-VALUE"}"#
            let script =
                "secret-tool lookup service ci username token; echo; "
                + "printf '%s' '\(document)' | age -e -R '\(signed.vault)/.recipients' -o '\(signed.item("ci", "planted"))'; "
                + "secret-tool lookup service ci username planted; echo \"planted: $?\""
            let result = try served(script, extra: SignedTree.required)
            #expect(result.stdoutText.contains("signed-value"), "\(result.status) \(result.stderr)")
            #expect(!result.stdoutText.contains("FORGED") && !result.stderr.contains("FORGED"))
            #expect(result.stdoutText.contains("planted: 1"), "\(result.stdoutText)")
            // Started again on the vault that now holds the forgery: it does not serve at all.
            let again = try served("echo ran", extra: SignedTree.required)
            #expect(again.status == 77 && again.stderr.contains("ci/planted") && !again.stdoutText.contains("ran"))
        }
    }

    @Test func aWriteWithoutASigningKeyToASignedVaultIsRefusedAndChangesNothing() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "real").status == 0)
            let unsigned = ["KEYCHAIN_SIGNING_KEY": ""]
            let set = try cli(["-s", "ci", "set", "token"], stdin: Data("NEW".utf8), extra: unsigned)
            #expect(set.status == 77 && set.stderr.contains("signed vault"), "\(set.stderr)")
            #expect(try cli(["-s", "ci", "delete", "token"], extra: unsigned).status == 77)
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "real")
        }
    }
}
