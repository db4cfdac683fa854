import Foundation
import TestSupport
import Testing

/// The merge driver as git runs it: identities, rebases, passphrase vaults, its exit statuses.
extension TreeVaultMergeTests {
    /// The driver with no identity: a conflict that says which identity to give; ours untouched.
    @Test func theDriverWithoutAnIdentitySaysWhichToGive() throws {
        let repo = try TreeRepo("tree-noid", driver: true)
        defer { repo.remove() }
        try repo.set("ci/a", MergeScenario.base)
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        try repo.edit("ci/a", TreeScenarioCode.label)
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try repo.set("ci/a", MergeScenario.ours)
        try repo.commit("ours")
        let ours = try Data(contentsOf: URL(fileURLWithPath: repo.file("ci/a")))
        let merge = try repo.git(["merge", "--no-edit", "theirs"], ["KEYCHAIN_IDENTITY": ""])
        #expect(merge.status == 1)
        #expect(
            merge.stderr.contains("cannot merge ci/a") && merge.stderr.contains("$KEYCHAIN_IDENTITY"), "\(merge.stderr)"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: repo.file("ci/a"))) == ours)
        // With the identity, the same merge is clean, and stock age opens the result.
        expectSuccess(try repo.git(["merge", "--abort"]))
        expectSuccess(try repo.git(["merge", "--no-edit", "theirs"]))
        let document = try repo.document("ci/a", identity: repo.otherIdentity)
        #expect(document?["secret"] as? String == MergeScenario.ours && document?["label"] as? String == "Deploy key")
    }

    /// A recipient added on one branch, an item on the other: the item stays encrypted to its
    /// branch's recipients until every item is re-encrypted (docs: vault recipients add again).
    @Test func itemsMergedFromABranchWithoutANewRecipientAreReencryptedOnRequest() throws {
        let repo = try TreeRepo("tree-reencrypt", driver: true)
        defer { repo.remove() }
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        try repo.set("ci/b", MergeScenario.theirs)
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try TreeStep.addRecipient.apply(repo)
        try repo.commit("ours")
        expectSuccess(try repo.git(["merge", "--no-edit", "theirs"]))
        let third = repo.scratch.path("third.txt")
        #expect(try repo.document("ci/b", identity: third) == nil)
        let recipient = try repo.kc(["vault", "recipients", "list"]).stdoutText.split(separator: "\n").last.map(
            String.init)
        expectSuccess(try repo.kc(["vault", "recipients", "add", recipient ?? ""]))
        #expect(try repo.document("ci/b", identity: third)?["secret"] as? String == MergeScenario.theirs)
    }

    /// A rebase names no commit as theirs: a value from the commit replayed is not merged (who
    /// may read it is not known), one from the branch below it is.
    @Test func aRebaseMergesOnlyWhatItCanEncryptSafely() throws {
        let repo = try TreeRepo("tree-rebase", driver: true)
        defer { repo.remove() }
        try repo.set("ci/a", MergeScenario.base)
        try repo.set("ci/b", MergeScenario.base)
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "topic"]))
        try repo.set("ci/a", MergeScenario.theirs)
        try repo.edit("ci/b", TreeScenarioCode.label)
        try repo.commit("topic")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try repo.edit("ci/a", TreeScenarioCode.label)
        try repo.set("ci/b", MergeScenario.ours)
        try repo.commit("main")
        expectSuccess(try repo.git(["checkout", "-q", "topic"]))
        let rebase = try repo.git(["rebase", "main"])
        #expect(rebase.status != 0)
        #expect(rebase.stderr.contains("conflict: ci/a: the merged value is theirs"), "\(rebase.stderr)")
        #expect(!rebase.stderr.contains("conflict: ci/b"), "\(rebase.stderr)")
        // ci/b took main's value and the topic's label; ci/a is left as the rebase's "ours" (main's).
        let b = try repo.document("ci/b")
        #expect(b?["secret"] as? String == MergeScenario.ours && b?["label"] as? String == "Deploy key")
        #expect(try repo.get("ci/a") == MergeScenario.base)
        #expect(try repo.findSecrets(MergeScenario.secrets) == [])
        expectSuccess(try repo.git(["rebase", "--abort"]))
    }

    /// A passphrase tree vault beside a team vault in one repository: git runs the driver with
    /// the passphrase in its environment, and the same value added on both sides merges.
    @Test func aPassphraseTreeVaultMergesWithThePassphraseInGitsEnvironment() throws {
        let repo = try TreeRepo("tree-passphrase", driver: true)
        defer { repo.remove() }
        let vault = "\(repo.repo)/p"
        let environment = [
            "KEYCHAIN_VAULT": vault, "KEYCHAIN_PASSPHRASE": "correct horse battery", "KEYCHAIN_IDENTITY": "",
            "KEYCHAIN_VAULT_WORK_FACTOR": "10",
        ]
        expectSuccess(try repo.kc(["vault", "init", vault], environment))
        expectSuccess(try repo.kc(["vault", "git-setup"], environment))
        func set(_ key: String, _ value: String) throws {
            expectSuccess(
                try repo.kc(
                    ["-s", "ci", "set", key, "--from-env", "VALUE"], environment.merging(["VALUE": value]) { $1 }))
        }
        try set("a", MergeScenario.base)
        try repo.commit("base")
        expectSuccess(try repo.git(["checkout", "-q", "-b", "theirs"]))
        try set("a", MergeScenario.same)
        try repo.commit("theirs")
        expectSuccess(try repo.git(["checkout", "-q", "main"]))
        try set("a", MergeScenario.same)
        try repo.commit("ours")
        let wrong = try repo.git(
            ["merge", "--no-edit", "theirs"], environment.merging(["KEYCHAIN_PASSPHRASE": "wrong"]) { $1 })
        #expect(wrong.status == 1 && wrong.stderr.contains("cannot merge ci/a"), "\(wrong.stderr)")
        expectSuccess(try repo.git(["merge", "--abort"]))
        expectSuccess(try repo.git(["merge", "--no-edit", "theirs"], environment))
        #expect(try repo.kc(["-s", "ci", "get", "a"], environment).stdoutText == MergeScenario.same)
        let log = try repo.git(["log", "-p", "-1", "theirs"], environment).stdoutText
        #expect(log.contains("value: fingerprint ") && !log.contains(MergeScenario.same), "\(log)")
        #expect(try repo.findSecrets(MergeScenario.secrets) == [])
    }

    /// The driver run as git runs it, its own exit status: 0 and ours replaced by the merge; 1 for
    /// a conflict, and for an identity that is missing or none, ours untouched each time.
    @Test func theDriverExitsOneAndLeavesOursForEveryFailure() throws {
        let repo = try TreeRepo("tree-driver", driver: true)
        defer { repo.remove() }
        try repo.set("ci/a", MergeScenario.ours)
        let ours = repo.scratch.path("ours.age")
        let theirs = repo.scratch.path("theirs.age")
        let empty = repo.scratch.path("empty")
        try FileManager.default.copyItem(atPath: repo.file("ci/a"), toPath: ours)
        try repo.set("ci/a", MergeScenario.theirs)
        try FileManager.default.copyItem(atPath: repo.file("ci/a"), toPath: theirs)
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        let before = try Data(contentsOf: URL(fileURLWithPath: ours))
        let arguments = ["vault", "merge-driver", empty, ours, theirs, repo.file("ci/a")]
        for (extra, message) in [
            ([:], "conflict: ci/a: both sides changed its secret differently"),
            (["KEYCHAIN_IDENTITY": repo.scratch.path("nowhere.txt")], "cannot merge ci/a"),
            (["KEYCHAIN_IDENTITY": ""], "$KEYCHAIN_IDENTITY"),
        ] {
            let run = try repo.kc(arguments, extra)
            #expect(run.status == 1 && run.stderr.contains(message), "\(extra): \(run.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: ours)) == before)
        }
        // Both added the same item with the same value: merged, and a new file.
        let same = try repo.kc(["vault", "merge-driver", empty, ours, ours, repo.file("ci/a")])
        expectSuccess(same)
        #expect(try Data(contentsOf: URL(fileURLWithPath: ours)) != before)
        let opened = try runProcess("/usr/bin/age", ["-d", "-i", repo.identity, ours], environment: repo.environment)
        #expect(opened.status == 0 && opened.stdoutText.contains(MergeScenario.ours))
        #expect(try repo.findSecrets(MergeScenario.secrets) == [])
    }
}
