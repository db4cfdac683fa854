import Foundation
import TestSupport
import Testing

/// Signed vaults with the real ssh-keygen and age: our signatures are OpenSSH's, each way.
@Suite("Signed vaults: OpenSSH signatures beside every file")
struct SignedVaultTests {
    @Test func sshKeygenVerifiesOurSignaturesAndWeAcceptItsOwn() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "value").status == 0)
            for relative in [".recipients", "ci/token.age"] {
                let verified = try sshKeygen(
                    [
                        "-Y", "verify", "-f", signed.allowedSigners, "-I", "alice@example.com", "-n",
                        SignedTree.namespace, "-s", signed.vault + "/" + relative + ".sig",
                    ], stdin: try signed.message(relative))
                #expect(verified.status == 0 && verified.stdoutText.contains("Good"), "\(verified.stderr)")
            }
            // ssh-keygen -Y sign with the documented namespace and message, in place of ours.
            let message = signed.tree.scratch.path("message")
            try signed.message("ci/token.age").write(to: URL(fileURLWithPath: message))
            let made = try sshKeygen(["-Y", "sign", "-f", signed.alice, "-n", SignedTree.namespace, message])
            #expect(made.status == 0, "\(made.stderr)")
            try signed.copy(message + ".sig", over: signed.item("ci", "token") + ".sig")
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "value")
            // Another namespace is another purpose: refused.
            try FileManager.default.removeItem(atPath: message + ".sig")
            let git = try sshKeygen(["-Y", "sign", "-f", signed.alice, "-n", "git", message])
            #expect(git.status == 0)
            try signed.copy(message + ".sig", over: signed.item("ci", "token") + ".sig")
            let read = try cli(["-s", "ci", "get", "token"], extra: SignedTree.required)
            #expect(read.status == 77 && read.stderr.contains("namespace"), "\(read.stderr)")
        }
    }

    @Test func verifyAndDoctorReportEveryFilesStateAndExit77UnlessAllAreSigned() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            #expect(try cli(["-s", "ci", "set", "b"], input: "2").status == 0)
            let clean = try cli(["vault", "verify"])
            #expect(clean.status == 0 && clean.stdoutText.components(separatedBy: "signed by alice").count == 4)
            #expect(try cli(["doctor"]).status == 0)
            try FileManager.default.removeItem(atPath: signed.item("ci", "b") + ".sig")
            let report = try cli(["vault", "verify", "--json"])
            #expect(report.status == 77)
            let files = try JSONSerialization.jsonObject(with: report.stdout) as? [[String: Any]] ?? []
            #expect(files.map { $0["file"] as? String } == ["the recipients list", "ci/a", "ci/b"])
            #expect(files.map { $0["signed"] as? Bool } == [true, true, false])
            #expect((files[1]["principals"] as? [String]) == ["alice@example.com"])
            let doctor = try cli(["doctor"])
            #expect(doctor.status == 77 && (doctor.stdoutText + doctor.stderr).contains("ci/b"), "\(doctor.stderr)")
            // An unsigned b is still read by a reader that neither requires signatures nor signs; with
            // --require-signed, a is, b is not.
            #expect(try cli(["-s", "ci", "get", "b"], extra: ["KEYCHAIN_SIGNING_KEY": ""]).stdoutText == "2")
            #expect(try cli(["-s", "ci", "get", "a"], extra: SignedTree.required).stdoutText == "1")
            #expect(try cli(["-s", "ci", "get", "b"], extra: SignedTree.required).status == 77)
            #expect(try cli(["vault", "sign"]).stderr.contains("signed 1 file"))
            #expect(try cli(["vault", "verify"]).status == 0)
        }
    }

    @Test func recipientsChangesAndDeletesKeepTheVaultSigned() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            #expect(try cli(["-s", "ci", "set", "b"], input: "2").status == 0)
            let bob = try cli(["vault", "keygen", "-o", signed.tree.scratch.path("bob.txt")], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            #expect(try cli(["vault", "recipients", "add", bob], extra: SignedTree.required).status == 0)
            #expect(try cli(["-s", "ci", "delete", "b"], extra: SignedTree.required).status == 0)
            #expect(!FileManager.default.fileExists(atPath: signed.item("ci", "b") + ".sig"))
            #expect(try cli(["vault", "verify"]).status == 0)
            let asBob = SignedTree.required.merging(["KEYCHAIN_IDENTITY": signed.tree.scratch.path("bob.txt")]) { $1 }
            #expect(try cli(["-s", "ci", "get", "a"], extra: asBob).stdoutText == "1")
        }
    }

    /// A signature's file is KEY.age.sig: a key must leave room for it (247 bytes escaped).
    @Test func aKeyTooLongForItsSignaturesFileIsRefusedInASignedVault() throws {
        try SignedTree.run { signed in
            let long = String(repeating: "k", count: 248)
            let refused = try cli(["-s", "ci", "set", long], input: "v")
            #expect(refused.status == 64 && refused.stderr.contains("247"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: signed.item("ci", long)))
            #expect(try cli(["-s", "ci", "set", String(long.dropLast())], input: "v").status == 0)
            #expect(
                try cli(["-s", "ci", "get", String(long.dropLast())], extra: SignedTree.required).stdoutText == "v")
        }
    }

    /// --require-signed needs allowed signers (64); a pinned allowed_signers file that changed is 77.
    @Test func theAllowedSignersMustBeGivenAndMatchTheirPin() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "a"], input: "1").status == 0)
            let none = SignedTree.required.merging(["KEYCHAIN_ALLOWED_SIGNERS": ""]) { $1 }
            #expect(try cli(["-s", "ci", "get", "a"], extra: none).status == 64)
            let digest = String(
                try runProcess("/usr/bin/sha256sum", [signed.allowedSigners], environment: [:]).stdoutText.prefix(64))
            let pinned = SignedTree.required.merging(["KEYCHAIN_ALLOWED_SIGNERS_SHA256": digest]) { $1 }
            #expect(try cli(["-s", "ci", "get", "a"], extra: pinned).stdoutText == "1")
            let mallory = try String(contentsOfFile: signed.mallory + ".pub", encoding: .utf8)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: signed.allowedSigners))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("mallory@example.com \(mallory)".utf8))
            try handle.close()
            let changed = try cli(["-s", "ci", "get", "a"], extra: pinned)
            #expect(changed.status == 77 && changed.stderr.contains("pins") && changed.stdout.isEmpty)
        }
    }

    @Test func aSingleFileVaultIsSignedWhole() throws {
        try SignedTree.run { signed in
            let file = signed.tree.scratch.path("single.age")
            let vault = ["KEYCHAIN_VAULT": file, "KEYCHAIN_PASSPHRASE": "pass", "KEYCHAIN_VAULT_WORK_FACTOR": "10"]
            #expect(try cli(["-s", "ci", "set", "a"], stdin: Data("1".utf8), extra: vault).status == 0)
            #expect(FileManager.default.fileExists(atPath: file + ".sig"))
            let required = vault.merging(SignedTree.required) { $1 }
            #expect(try cli(["-s", "ci", "get", "a"], extra: required).stdoutText == "1")
            // Another vault signed by alice, copied over it under its name: its own content, not this one's.
            let copy = signed.tree.scratch.path("copy.age")
            #expect(
                try cli(
                    ["-s", "ci", "set", "a"], stdin: Data("2".utf8),
                    extra: vault.merging(["KEYCHAIN_VAULT": copy]) { $1 }
                ).status == 0)
            try signed.copy(copy, over: file)
            let read = try cli(["-s", "ci", "get", "a"], extra: required)
            #expect(read.status == 77 && read.stdout.isEmpty && read.stderr.contains("the vault"), "\(read.stderr)")
            // Its signature too: signed for another file name.
            try signed.copy(copy + ".sig", over: file + ".sig")
            #expect(try cli(["-s", "ci", "get", "a"], extra: required).status == 77)
            #expect(try cli(["vault", "verify"], extra: vault).status == 77)
            #expect(try cli(["vault", "sign"], extra: vault).status == 0)
            #expect(try cli(["-s", "ci", "get", "a"], extra: required).stdoutText == "2")
        }
    }

    /// Readers that require signatures race a writer: a reader that reads an item between the
    /// writer's two renames reads both again under the lock, so it never refuses a signed vault.
    @Test func readersRacingAWriterNeverSeeAHalfSignedItem() throws {
        try SignedTree.run { signed in
            #expect(try cli(["-s", "ci", "set", "token"], input: "v0").status == 0)
            let writer = DispatchQueue(label: "writer")
            let done = DispatchSemaphore(value: 0)
            let environment = CLIBackend.overrides  // a task-local: the writer's thread has its own
            writer.async {
                CLIBackend.$overrides.withValue(environment) {
                    for round in 1...15 { _ = try? cli(["-s", "ci", "set", "token"], input: "v\(round)") }
                }
                done.signal()
            }
            var statuses: [Int32] = []
            while done.wait(timeout: .now()) == .timedOut {
                statuses.append(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).status)
            }
            #expect(!statuses.isEmpty && statuses.allSatisfy { $0 == 0 }, "\(statuses)")
            #expect(try cli(["-s", "ci", "get", "token"], extra: SignedTree.required).stdoutText == "v15")
        }
    }
}

/// A signed tree vault in git: two branches that signed different secrets merge with plain git,
/// and every file still verifies; a file a branch changed without signing is caught after the merge.
@Suite("Signed vaults in git")
struct SignedVaultGitTests {
    @Test func branchesThatSignedDifferentSecretsMergeCleanAndVerify() throws {
        let repo = try TreeRepo("signed-merge", driver: false)
        defer { repo.remove() }
        let key = repo.scratch.path("alice")
        #expect(try sshKeygen(["-q", "-t", "ed25519", "-N", "", "-f", key]).status == 0)
        let allowed = repo.scratch.path("allowed_signers")
        let publicKey = try String(contentsOfFile: key + ".pub", encoding: .utf8)
        try "alice@example.com \(publicKey)".write(toFile: allowed, atomically: true, encoding: .utf8)
        let signing = ["KEYCHAIN_SIGNING_KEY": key, "KEYCHAIN_ALLOWED_SIGNERS": allowed]
        let required = signing.merging(SignedTree.required) { $1 }
        func set(_ item: String, _ value: String) throws {
            let set = try repo.kc(["-s", "ci", "set", item, "--from-env", "V"], signing.merging(["V": value]) { $1 })
            #expect(set.status == 0, "\(set.stderr)")
        }
        expectSuccess(try repo.kc(["vault", "sign"], signing))
        try set("a", "base-a")
        try set("b", "base-b")
        try repo.commit("signed base")
        expectSuccess(try repo.git(["checkout", "-qb", "left"]))
        try set("a", "left-a")
        try repo.commit("left")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try set("b", "main-b")
        try repo.commit("main")
        expectSuccess(try repo.git(["merge", "-q", "--no-edit", "left"]))
        #expect(try repo.kc(["-s", "ci", "get", "a"], required).stdoutText == "left-a")
        #expect(try repo.kc(["-s", "ci", "get", "b"], required).stdoutText == "main-b")
        #expect(try repo.kc(["vault", "verify"], signing).status == 0)
        // A branch that changed an item with age alone merges as cleanly, and is caught.
        expectSuccess(try repo.git(["checkout", "-qb", "unsigned"]))
        try repo.edit("ci/a", "d['secret'] = 'UNSIGNED'")
        try repo.commit("unsigned change")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        expectSuccess(try repo.git(["merge", "-q", "--no-edit", "unsigned"]))
        let read = try repo.kc(["-s", "ci", "get", "a"], required)
        #expect(read.status == 77 && read.stdout.isEmpty && read.stderr.contains("ci/a"), "\(read.stderr)")
    }

    /// A branch whose recipients list adds someone no allowed signer signed: the merge driver
    /// refuses to encrypt a secret to it (a conflict), whatever the branch did to its signatures.
    @Test func theMergeDriverNeverEncryptsToAnUnsignedRecipient() throws {
        let repo = try TreeRepo("signed-merge-driver", driver: true)
        defer { repo.remove() }
        let (alice, mallory) = (repo.scratch.path("alice"), repo.scratch.path("mallory"))
        for key in [alice, mallory] {
            #expect(try sshKeygen(["-q", "-t", "ed25519", "-N", "", "-f", key]).status == 0)
        }
        let (allowed, hers) = (repo.scratch.path("allowed_signers"), repo.scratch.path("mallory_signers"))
        try "alice@example.com \(try String(contentsOfFile: alice + ".pub", encoding: .utf8))".write(
            toFile: allowed, atomically: true, encoding: .utf8)
        // Hers: her own environment, which trusts her key too.
        try
            "mallory@example.com \(try String(contentsOfFile: mallory + ".pub", encoding: .utf8))\n\(try String(contentsOfFile: allowed, encoding: .utf8))"
            .write(toFile: hers, atomically: true, encoding: .utf8)
        let asAlice = ["KEYCHAIN_SIGNING_KEY": alice, "KEYCHAIN_ALLOWED_SIGNERS": allowed]
        let eve = repo.scratch.path("eve.txt")
        let eveRecipient = try repo.kc(["vault", "keygen", "-o", eve]).stdoutText.trimmingCharacters(in: .newlines)
        expectSuccess(try repo.kc(["vault", "sign"], asAlice))
        expectSuccess(
            try repo.kc(["-s", "ci", "set", "token", "--from-env", "V"], asAlice.merging(["V": "v1"]) { $1 }))
        try repo.commit("signed")
        expectSuccess(try repo.git(["checkout", "-qb", "pr"]))
        let asMallory = ["KEYCHAIN_SIGNING_KEY": mallory, "KEYCHAIN_ALLOWED_SIGNERS": hers]
        expectSuccess(try repo.kc(["vault", "recipients", "add", eveRecipient], asMallory))
        expectSuccess(try repo.git(["checkout", "-q", "main", "--", "v/ci/token.age.sig"]))
        try repo.commit("housekeeping")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        let rotated = "ROTATED-\(UUID().uuidString)"
        expectSuccess(
            try repo.kc(["-s", "ci", "set", "token", "--from-env", "V"], asAlice.merging(["V": rotated]) { $1 }))
        try repo.commit("rotate")
        let merge = try repo.git(["merge", "--no-edit", "pr"], asAlice.merging(SignedTree.required) { $1 })
        #expect(merge.status != 0, "\(merge.stdoutText) \(merge.stderr)")
        let opened = try runAge(["-d", "-i", eve, repo.file("ci/token")])
        #expect(opened.status != 0 && !opened.stdoutText.contains(rotated))
        #expect(!(try repo.git(["show", "HEAD:v/ci/token.age"]).stdout.isEmpty))
    }
}
