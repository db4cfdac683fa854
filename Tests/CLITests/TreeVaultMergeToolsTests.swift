import Foundation
import TestSupport
import Testing

extension TreeVaultMergeTests {
    /// The scan itself finds a value: in a git object only zlib holds, loose and packed, and in a
    /// file of TMPDIR.
    @Test func theScanForValuesFindsOne() throws {
        let repo = try TreeRepo("tree-scan", driver: false)
        defer { repo.remove() }
        let canary = "canary-value-Jd42"
        #expect(try repo.findSecrets([canary]) == [])
        // In history only: committed, then removed from the work tree.
        let object = try runProcess(
            "/bin/sh", ["-c", #"printf %s "$C" > "$R/canary.txt""#],
            environment: repo.environment.merging(["C": canary, "R": repo.repo]) { $1 })
        expectSuccess(object)
        try repo.commit("canary")
        expectSuccess(try repo.git(["rm", "-q", "canary.txt"]))
        try repo.commit("no canary")
        #expect(try repo.findSecrets([canary]) == ["\(canary) in a git object"])
        // Now packed (no loose object is left), and still found.
        #expect(try repo.git(["count-objects", "-v"]).stdoutText.hasPrefix("count: 0\n"))
        #expect(try repo.findSecrets([canary]) == ["\(canary) in a git object"])
        try Data(canary.utf8).write(to: URL(fileURLWithPath: "\(repo.tmp)/left"))
        #expect(try repo.findSecrets([canary]).contains("\(canary) in tmp/left"))
    }

    /// git-setup adds its line once and keeps the others, sets the local configuration to this
    /// keychain-cli, makes a missing fingerprint key; outside a git work tree it exits 69.
    @Test func gitSetupIsIdempotentAndNeedsAWorkTree() throws {
        let repo = try TreeRepo("tree-setup", driver: false)
        defer { repo.remove() }
        let attributes = "\(repo.vault)/.gitattributes"
        try Data("# ours\n*.txt text".utf8).write(to: URL(fileURLWithPath: attributes))
        try FileManager.default.removeItem(atPath: "\(repo.vault)/.fingerprint.age")
        let first = try repo.kc(["vault", "git-setup"])
        expectSuccess(first)
        #expect(first.stderr.contains(".fingerprint.age"), "\(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: "\(repo.vault)/.fingerprint.age"))
        expectSuccess(try repo.kc(["vault", "git-setup"]))
        let expected = "# ours\n*.txt text\n*.age diff=keychain-cli-vault merge=keychain-cli-vault\n"
        #expect(try String(contentsOfFile: attributes, encoding: .utf8) == expected)
        let program = URL(fileURLWithPath: keychainCLIPath).resolvingSymlinksInPath().path
        for (name, value) in [
            ("merge.keychain-cli-vault.driver", "\(program) vault merge-driver %O %A %B %P"),
            ("diff.keychain-cli-vault.textconv", "\(program) vault textconv"),
            ("diff.keychain-cli-vault.cachetextconv", "false"),
        ] {
            #expect(try repo.git(["config", "--local", "--get", name]).stdoutText == value + "\n", "\(name)")
        }
        #expect(
            try repo.git(["config", "--local", "--get-all", "merge.keychain-cli-vault.driver"]).stdoutText
                .split(separator: "\n").count == 1)
        // A tree vault outside any git work tree: 69 for git-setup and diff, one line each.
        let lone = repo.scratch.path("lone")
        expectSuccess(try repo.kc(["vault", "init", lone, "--recipient", repo.otherRecipient]))
        for command in [["vault", "git-setup"], ["vault", "diff"]] {
            let outside = try repo.kc(["--vault", lone] + command, ["GIT_CEILING_DIRECTORIES": repo.scratch.url.path])
            #expect(outside.status == 69, "\(outside.stderr)")
            #expect(outside.stderr.contains("not in a git work tree"), "\(outside.stderr)")
            #expect(outside.stderr.split(separator: "\n").count == 1, "\(outside.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(lone)/.gitattributes"))
        // A single-file vault is not what these commands are for.
        let file = try repo.kc(["--vault", repo.scratch.path("vault.age"), "vault", "git-setup"])
        #expect(file.status == 64, "\(file.stderr)")
    }

    /// git diff, git log -p and git show run textconv: a changed value is a changed fingerprint,
    /// equal values share one, a value is never shown; a file no identity opens is one line.
    @Test func textconvShowsFingerprintsNeverValues() throws {
        let repo = try TreeRepo("tree-textconv", driver: true)
        defer { repo.remove() }
        let (first, second) = ("first-value-Hy63", "second-value-Pq19")
        try repo.set("ci/token", first)
        try repo.set("db/copy", first)
        try repo.commit("first")
        try repo.set("ci/token", second)
        try repo.commit("second")
        func fingerprint(_ text: String, _ prefix: String = "") -> [String] {
            text.split(separator: "\n").filter { $0.hasPrefix(prefix + "value: fingerprint ") }.map {
                String($0.dropFirst(prefix.count + "value: fingerprint ".count))
            }
        }
        let diff = try repo.git(["diff", "HEAD~1", "HEAD"])
        expectSuccess(diff)
        let (old, new) = (fingerprint(diff.stdoutText, "-"), fingerprint(diff.stdoutText, "+"))
        #expect(old.count == 1 && new.count == 1 && old != new && old.first?.count == 16, "\(diff.stdoutText)")
        let copy = try repo.kc(["vault", "textconv", repo.file("db/copy")])
        #expect(copy.status == 0 && fingerprint(copy.stdoutText) == old, "\(copy.stdoutText)")
        #expect(copy.stdoutText.contains("service: db\nkey: copy\n"))
        #expect(copy.stdoutText.contains("recipients: 2 stanzas (X25519×2)"))
        for command in [["log", "-p"], ["show", "HEAD"], ["diff", "HEAD~2"]] {
            let shown = try repo.git(command)
            expectSuccess(shown)
            #expect(shown.stdoutText.contains("value: fingerprint"), "\(command)")
            #expect(!shown.stdoutText.contains(first) && !shown.stdoutText.contains(second), "\(command)")
        }
        let locked = try repo.kc(["vault", "textconv", repo.file("ci/token")], ["KEYCHAIN_IDENTITY": ""])
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(locked.stdoutText.contains("cannot be opened with the identities given"))
        #expect(locked.stdoutText.contains("recipients: 2 stanzas (X25519×2)"))
        // An ssh-ed25519 member: its stanza is counted by its type.
        let carol = repo.scratch.path("carol")
        expectSuccess(
            try runProcess(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "carol@ci", "-f", carol],
                environment: repo.environment))
        expectSuccess(try repo.kc(["vault", "recipients", "add", carol + ".pub"]))
        let three = try repo.kc(["vault", "textconv", repo.file("ci/token")])
        #expect(three.stdoutText.contains("recipients: 3 stanzas (X25519×2, ssh-ed25519×1)\n"), "\(three.stdoutText)")
        #expect(fingerprint(three.stdoutText) == new, "a re-encrypted value keeps its fingerprint")
        // An identity file that is not there: still a description, and the reason on stderr.
        let missing = try repo.kc(
            ["vault", "textconv", repo.file("ci/token")], ["KEYCHAIN_IDENTITY": repo.scratch.path("nowhere.txt")])
        #expect(missing.status == 0 && missing.stdoutText.contains("cannot be opened"), "\(missing.stderr)")
        #expect(missing.stderr.contains("nowhere.txt"), "\(missing.stderr)")
        #expect(try repo.findSecrets([first, second]) == [])
    }

    /// vault diff: the work tree against HEAD (an untracked item too), and two revisions.
    @Test func vaultDiffSaysWhatChanged() throws {
        let repo = try TreeRepo("tree-diff", driver: true)
        defer { repo.remove() }
        let (zero, one, two) = ("zero-value-Bn31", "one-value-Vc08", "two-value-Lk77")
        try repo.set("ci/token", zero)
        try repo.set("ci/old", zero)
        try repo.set("ci/kept", zero)
        try repo.commit("base")
        func fingerprint(_ item: String) throws -> String {
            let shown = try repo.kc(["vault", "textconv", repo.file(item)]).stdoutText
            return String(shown.split(separator: "\n").first { $0.hasPrefix("value: fingerprint ") }!.dropFirst(19))
        }
        let before = try fingerprint("ci/token")
        try repo.set("ci/token", one)
        try repo.delete("ci/old")
        try repo.set("ci/new", two)
        try repo.edit("ci/kept", TreeScenarioCode.label)
        let lines = try repo.kc(["vault", "diff"])
        #expect(lines.status == 0, "\(lines.stderr)")
        let expected = [
            "~ ci/kept label changed",
            "~ ci/kept attributes changed",
            "+ ci/new created (value \(try fingerprint("ci/new")))",
            "- ci/old deleted",
            "~ ci/token value changed (\(before) → \(try fingerprint("ci/token")))",
        ]
        #expect(lines.stdoutText == expected.map { $0 + "\n" }.joined(), "\(lines.stdoutText)")
        try repo.commit("changes")
        let committed = try repo.kc(["vault", "diff", "HEAD~1", "HEAD"])
        #expect(committed.stdoutText == lines.stdoutText, "\(committed.stdoutText)")
        // A new member: .recipients, every item re-encrypted, the same fingerprint key.
        let third = try repo.kc(["vault", "keygen", "-o", repo.scratch.path("third.txt")]).stdoutText
            .trimmingCharacters(in: .newlines)
        expectSuccess(try repo.kc(["vault", "recipients", "add", third]))
        let added = try repo.kc(["vault", "diff"]).stdoutText
        #expect(added.contains("~ ci/token re-encrypted (recipients changed: 3 stanzas (X25519×3))\n"), "\(added)")
        #expect(added.contains("+ recipient \(third)\n") && added.contains("~ fingerprint key re-encrypted"))
        try repo.commit("third")
        // Removing one makes a new fingerprint key.
        expectSuccess(try repo.kc(["vault", "recipients", "remove", repo.otherRecipient]))
        let removed = try repo.kc(["vault", "diff"]).stdoutText
        #expect(removed.contains("- recipient \(repo.otherRecipient)\n"), "\(removed)")
        #expect(removed.contains("~ fingerprint key replaced (a new key)"), "\(removed)")
        #expect(try repo.document("ci/token", identity: repo.otherIdentity) == nil)
        let bad = try repo.kc(["vault", "diff", "--", "-p"])
        #expect(bad.status == 64, "\(bad.stderr)")
        for output in [lines.stdoutText, added, removed] {
            for value in [zero, one, two] { #expect(!output.contains(value)) }
        }
        #expect(try repo.findSecrets([zero, one, two]) == [])
    }

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
