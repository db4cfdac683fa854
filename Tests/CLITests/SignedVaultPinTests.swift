import Foundation
import TestSupport
import Testing

/// What an outside attack on signed vaults found, kept as facts: a whole vault swapped for
/// another (caught when the id is pinned), a planted id, a vault file reached by a link, a
/// signature that is a directory, an allowed signers file that is a FIFO.
@Suite("Signed vaults: what an attack found")
struct SignedVaultPinTests {
    /// Another vault signed by the same signer, copied in whole (its id, recipients and item):
    /// it verifies as itself unless the reader pins the id it expects.
    @Test func aWholeVaultSwappedInIsRefusedWhenTheIdIsPinned() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "production").status == 0)
            let id = try String(contentsOfFile: signed.vault + "/.vault-id", encoding: .utf8)
                .trimmingCharacters(in: .newlines)
            let staging = signed.tree.scratch.path("staging")
            #expect(try cli(["vault", "init", staging, "--recipient", signed.tree.recipient]).status == 0)
            #expect(try cli(["--vault", staging, "-s", "ci", "set", "token"], input: "staging").status == 0)
            for file in [".vault-id", ".recipients", ".recipients.sig", "ci/token.age", "ci/token.age.sig"] {
                try signed.copy(staging + "/" + file, over: signed.vault + "/" + file)
            }
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "staging")
            let pinned = SignedTree.required.merging(["KEYCHAIN_VAULT_ID": id]) { $1 }
            let read = try cli(["-s", "ci", "get", "token"], extra: pinned)
            #expect(read.status == 77 && read.stdout.isEmpty && read.stderr.contains("KEYCHAIN_VAULT_ID"))
            let write = try cli(["-s", "ci", "set", "new"], stdin: Data("secret".utf8), extra: pinned)
            #expect(write.status == 77 && !FileManager.default.fileExists(atPath: signed.item("ci", "new")))
        }
    }

    @Test func vaultInitReplacesAPlantedIdAndPrintsItsOwn() throws {
        try SignedTree.run { signed in
            let planted = signed.tree.scratch.path("planted")
            try FileManager.default.createDirectory(atPath: planted, withIntermediateDirectories: true)
            try signed.copy(signed.vault + "/.vault-id", over: planted + "/.vault-id")
            let made = try cli(["vault", "init", planted, "--recipient", signed.tree.recipient])
            let id = try String(contentsOfFile: planted + "/.vault-id", encoding: .utf8)
                .trimmingCharacters(in: .newlines)
            #expect(made.status == 0 && made.stderr.contains("its id is \(id)"), "\(made.stderr)")
            #expect(
                try id
                    != String(contentsOfFile: signed.vault + "/.vault-id", encoding: .utf8).trimmingCharacters(
                        in: .newlines))
        }
    }

    /// A vault file is signed under the name it is given: a link named like it that leads to
    /// another signed vault file is that other vault, and refused.
    @Test func aVaultFileLinkedToAnotherVaultIsRefused() throws {
        try SignedTree.run { signed in
            let (production, staging) = (signed.tree.scratch.path("prod.age"), signed.tree.scratch.path("staging.age"))
            let base = ["KEYCHAIN_PASSPHRASE": "pass", "KEYCHAIN_VAULT_WORK_FACTOR": "10"]
            for (file, value) in [(production, "production"), (staging, "staging")] {
                let set = try cli(
                    ["-s", "ci", "set", "token"], stdin: Data(value.utf8),
                    extra: base.merging(["KEYCHAIN_VAULT": file]) { $1 })
                #expect(set.status == 0, "\(set.stderr)")
            }
            try FileManager.default.removeItem(atPath: production)
            try FileManager.default.createSymbolicLink(atPath: production, withDestinationPath: staging)
            let read = try cli(
                ["-s", "ci", "get", "token"],
                extra: base.merging(SignedTree.required) { $1 }.merging(["KEYCHAIN_VAULT": production]) { $1 })
            #expect(read.status == 77 && read.stdout.isEmpty, "\(read.stderr)")
        }
    }

    /// A signature's file that is a directory (git can bring one) is no signature: verify still
    /// reports every file, get refuses, both 77.
    @Test func aSignatureThatIsADirectoryIsNoSignature() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            #expect(try cli(["-s", "ci", "set", "b"], input: "2").status == 0)
            try FileManager.default.removeItem(atPath: signed.item("ci", "a") + ".sig")
            try FileManager.default.createDirectory(
                atPath: signed.item("ci", "a") + ".sig", withIntermediateDirectories: false)
            let verify = try cli(["vault", "verify"])
            #expect(verify.status == 77 && verify.stdoutText.contains("ci/b: signed by"), "\(verify.stderr)")
            #expect(try cli(["-s", "ci", "get", "a"], extra: SignedTree.required).status == 77)
        }
    }

    /// An allowed signers file that is a FIFO nobody writes is refused at once, not waited on.
    @Test func anAllowedSignersFIFOIsRefusedNotWaitedOn() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            let fifo = signed.tree.scratch.path("fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let read = try cli(
                ["-s", "ci", "get", "a"], extra: SignedTree.required.merging(["KEYCHAIN_ALLOWED_SIGNERS": fifo]) { $1 },
                timeout: 20)
            #expect(read.status == 74 && read.stderr.contains("allowed signers"), "\(read.stderr)")
        }
    }

    /// A vault file put back unsigned (its signature still the old one's) is no file a signing
    /// writer signs again: its write is refused, and strict readers still refuse the forgery.
    @Test func aSigningWriteNeverSignsAForgedVaultFileAgain() throws {
        try SignedTree.run { signed in
            let file = signed.tree.scratch.path("f.age")
            let vault = ["KEYCHAIN_VAULT": file, "KEYCHAIN_PASSPHRASE": "pass", "KEYCHAIN_VAULT_WORK_FACTOR": "10"]
            #expect(try cli(["-s", "ci", "set", "token"], stdin: Data("good".utf8), extra: vault).status == 0)
            let forged = signed.tree.scratch.path("forged.age")
            try signed.copy(file, over: forged)
            let unsigned = vault.merging(["KEYCHAIN_VAULT": forged, "KEYCHAIN_SIGNING_KEY": ""]) { $1 }
            #expect(try cli(["-s", "ci", "set", "token"], stdin: Data("EVIL".utf8), extra: unsigned).status == 0)
            try signed.copy(forged, over: file)
            let write = try cli(["-s", "ci", "set", "other"], stdin: Data("x".utf8), extra: vault)
            #expect(write.status == 77, "\(write.stderr)")
            let read = try cli(["-s", "ci", "get", "token"], extra: vault.merging(SignedTree.required) { $1 })
            #expect(read.status == 77 && !read.stdoutText.contains("EVIL"))
        }
    }

    /// With the id pinned, a delete in another vault is refused as every write is.
    @Test func aDeleteInAVaultOfAnotherIdIsRefused() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "v").status == 0)
            let delete = try cli(["-s", "ci", "delete", "token"], extra: ["KEYCHAIN_VAULT_ID": "another-vault"])
            #expect(delete.status == 77 && FileManager.default.fileExists(atPath: signed.item("ci", "token")))
            let bad = try cli(["-s", "ci", "get", "token"], extra: ["KEYCHAIN_VAULT_ID": "../x"])
            #expect(bad.status == 64 && bad.stderr.contains("KEYCHAIN_VAULT_ID"))
        }
    }
}
