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
            ("merge.keychain-cli-vault.driver", "\(program) vault merge-driver -- %O %A %B %P"),
            ("diff.keychain-cli-vault.textconv", "\(program) vault textconv --"),
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
}
