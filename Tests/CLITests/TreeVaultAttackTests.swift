import Foundation
import TestSupport
import Testing

/// What an outside attack on tree vaults found (each was a break before its fix), kept as facts.
@Suite("Tree vaults: what an attack found")
struct TreeVaultAttackTests {
    /// A write must open the vault first, as a single-file vault's must: a wrong passphrase, or an
    /// identity that is no recipient, stores and deletes nothing (77), though anyone can encrypt
    /// to the public recipients.
    @Test func writesWithAWrongPassphraseOrAStrangersIdentityAre77AndChangeNothing() throws {
        try CLIBackend.withTreeVault { (vault: String) throws in
            #expect(try cli(["-s", "ci", "set", "a"], input: "kept").status == 0)
            let wrong = ["KEYCHAIN_PASSPHRASE": "wrong"]
            #expect(try cli(["-s", "ci", "set", "b"], stdin: Data("injected".utf8), extra: wrong).status == 77)
            #expect(try cli(["-s", "ci", "delete", "a"], extra: wrong).status == 77)
            #expect(try FileManager.default.contentsOfDirectory(atPath: vault + "/ci") == ["a.age"])
        }
        try TreeFixture.run { tree in
            #expect(try cli(["-s", "ci", "set", "a"], input: "kept").status == 0)
            let stranger = tree.scratch.path("stranger.txt")
            let strangerRecipient = try cli(["vault", "keygen", "-o", stranger], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            let foreign = ["KEYCHAIN_IDENTITY": stranger]
            let set = try cli(["-s", "ci", "set", "b"], stdin: Data("injected".utf8), extra: foreign)
            #expect(set.status == 77 && set.stderr.contains("recipients"), "\(set.stderr)")
            #expect(try cli(["-s", "ci", "delete", "a"], extra: foreign).status == 77)
            // Nor can they add themselves to the recipients.
            #expect(try cli(["vault", "recipients", "add", strangerRecipient], extra: foreign).status == 77)
            #expect(try String(contentsOfFile: tree.vault + "/.recipients", encoding: .utf8) == tree.recipient + "\n")
            #expect(try cli(["-s", "ci", "get", "a"]).stdoutText == "kept")
        }
    }

    /// "é" and "e" + U+0301 are two keys (two files) that Swift's String calls equal: both are
    /// kept, listed, exported; a file copied to the other's name is refused.
    @Test func canonicallyEquivalentNamesAreTwoItemsAndNeverStandInForEachOther() throws {
        try TreeFixture.run { tree in
            let (composed, decomposed) = ("\u{E9}", "e\u{301}")
            #expect(try cli(["-s", "ci", "set", composed], input: "one").status == 0)
            #expect(try cli(["-s", "ci", "set", decomposed], input: "two").status == 0)
            #expect(try cli(["-s", "ci", "get", composed]).stdoutText == "one")
            #expect(try cli(["-s", "ci", "get", decomposed]).stdoutText == "two")
            let exported = try cli(["-s", "ci", "export", "--yes"])
            let items = (try JSONSerialization.jsonObject(with: exported.stdout) as? [String: Any])?["items"] as? [Any]
            #expect(items?.count == 2)
            try FileManager.default.removeItem(atPath: tree.item("ci", "e%CC%81"))
            try FileManager.default.copyItem(atPath: tree.item("ci", "%C3%A9"), toPath: tree.item("ci", "e%CC%81"))
            #expect(try cli(["-s", "ci", "get", decomposed]).status == 65)
        }
    }

    /// A document with a member twice (two "secret"s) would read one way here and another with
    /// `age -d | jq`: refused (65), the value never repeated.
    @Test func anItemWithAMemberGivenTwiceIsRefused() throws {
        try TreeFixture.run { tree in
            let document =
                #"{"format":"keychain-cli-vault-item","version":1,"service":"ci","key":"tok","encoding":"utf8","#
                + #""secret":"FIRST-VALUE","secret":"LAST-VALUE"}"#
            try FileManager.default.createDirectory(atPath: tree.vault + "/ci", withIntermediateDirectories: true)
            let made = try runAge(
                ["-e", "-R", tree.vault + "/.recipients", "-o", tree.item("ci", "tok")], stdin: Data(document.utf8))
            #expect(made.status == 0)
            let read = try cli(["-s", "ci", "get", "tok"])
            #expect(read.status == 65 && read.stderr.contains("given twice"), "\(read.stderr)")
            #expect(!read.stderr.contains("VALUE") && read.stdout.isEmpty)
        }
    }

    /// doctor fails (74) a tree whose recipients or items other users can change, or whose
    /// directory another user owns.
    @Test func doctorFailsATreeOthersCanChange() throws {
        try TreeFixture.run { tree in
            #expect(try cli(["-s", "ci", "set", "a"], input: "v").status == 0)
            #expect(try cli(["doctor"]).status == 0)
            for file in [tree.vault + "/.recipients", tree.vault + "/ci", tree.item("ci", "a")] {
                var info = stat()
                stat(file, &info)
                chmod(file, info.st_mode & 0o777 | 0o022)
                let doctor = try cli(["doctor"])
                #expect(doctor.status == 74 && doctor.stdoutText.contains("go-w"), "\(file): \(doctor.stdoutText)")
                chmod(file, info.st_mode & 0o777)
            }
            if geteuid() == 0 {
                chown(tree.vault, 65534, 65534)
                #expect(try cli(["doctor"]).status == 74)
                chown(tree.vault, 0, 0)
            }
        }
    }

    /// A vault at the top of a repository whose directory begins with '-': git hands the driver
    /// and textconv paths like "-secrets/ci/tok.age", which are no options (git-setup puts `--`).
    @Test func gitsPathsThatBeginWithADashAreNoOptions() throws {
        try TreeFixture.run { tree in
            let repository = tree.scratch.path("-secrets")
            let git = { (arguments: [String]) throws -> ProcessResult in
                try runProcess(
                    "/usr/bin/git", ["-C", repository] + arguments,
                    environment: cliEnvironment(session: nil).merging([
                        "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A",
                        "GIT_COMMITTER_EMAIL": "a@example.org", "GIT_CONFIG_NOSYSTEM": "1",
                        "HOME": tree.scratch.url.path,
                    ]) { $1 })
            }
            #expect(try cli(["vault", "init", repository, "--recipient", tree.recipient], session: nil).status == 0)
            _ = try git(["init", "-q"])
            let inRepository = ["KEYCHAIN_VAULT": repository]
            #expect(try cli(["vault", "git-setup"], extra: inRepository).status == 0)
            #expect(try cli(["-s", "ci", "set", "tok"], stdin: Data("one".utf8), extra: inRepository).status == 0)
            _ = try git(["add", "-A"])
            _ = try git(["commit", "-qm", "one"])
            #expect(try cli(["-s", "ci", "set", "tok"], stdin: Data("two".utf8), extra: inRepository).status == 0)
            let diff = try git(["diff"])
            #expect(diff.status == 0 && diff.stdoutText.contains("fingerprint"), "\(diff.stderr)")
            #expect(!diff.stdoutText.contains("two"))
        }
    }

    /// A damaged, oversized, linked or FIFO item is that item's problem (65, naming the file and
    /// what to do), for get, generate and doctor alike; never "already there" nor a path to check.
    @Test func aDamagedItemIs65EverywhereAndDoctorNamesIt() throws {
        try TreeFixture.run { tree in
            #expect(try cli(["-s", "ci", "set", "a"], input: "v").status == 0)
            try Data("not age".utf8).write(to: URL(fileURLWithPath: tree.item("ci", "damaged")))
            let generate = try cli(["-s", "ci", "generate", "damaged"])
            #expect(generate.status == 65 && generate.stderr.contains("git checkout"), "\(generate.stderr)")
            #expect(!generate.stderr.contains("malformed("))
            #expect(FileManager.default.createFile(atPath: tree.item("ci", "big"), contents: Data(count: 9 << 20)))
            let big = try cli(["-s", "ci", "get", "big"])
            #expect(big.status == 65 && big.stderr.contains("larger than"), "\(big.stderr)")
            try FileManager.default.removeItem(atPath: tree.item("ci", "big"))
            try FileManager.default.removeItem(atPath: tree.item("ci", "damaged"))
            #expect(mkfifo(tree.item("ci", "fifo"), 0o600) == 0)
            let doctor = try cli(["doctor"])
            #expect(doctor.status == 65 && doctor.stdoutText.contains("ci/fifo.age"), "\(doctor.stdoutText)")
            let textconv = try cli(["vault", "textconv", tree.scratch.path("missing.age")])
            #expect(textconv.status == 74)
        }
    }

    /// Removing a passphrase tree vault's own identity from its recipients makes it a team vault:
    /// its identity file goes, and nothing asks for a passphrase that opens nothing.
    @Test func removingAPassphraseVaultsOwnIdentityMakesItATeamVault() throws {
        try CLIBackend.withTreeVault { (vault: String) throws in
            #expect(try cli(["-s", "ci", "set", "a"], input: "v").status == 0)
            let member = vault + "-member.txt"
            defer { try? FileManager.default.removeItem(atPath: member) }
            let recipient = try cli(["vault", "keygen", "-o", member], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            let own = try String(contentsOfFile: vault + "/.recipients", encoding: .utf8)
                .trimmingCharacters(in: .newlines)
            #expect(try cli(["vault", "recipients", "add", recipient]).status == 0)
            let removed = try cli(["vault", "recipients", "remove", own])
            #expect(removed.status == 0, "\(removed.stderr)")
            #expect(!FileManager.default.fileExists(atPath: vault + "/.identity.age"))
            #expect(try cli(["-s", "ci", "get", "a"], extra: ["KEYCHAIN_IDENTITY": member]).stdoutText == "v")
            #expect(try cli(["vault", "passwd"], extra: ["KEYCHAIN_NEW_PASSPHRASE": "x"]).status == 64)
        }
    }

    /// Canonically equivalent names are two secrets on every command that maps names (inject's
    /// references, import's file, exec's services), not only in a tree vault's files.
    @Test(arguments: [CLIBackend.vault, .treeVault])
    func canonicallyEquivalentNamesStayTwoSecretsThroughInjectImportAndExec(on backend: CLIBackend) throws {
        try backend.run {
            let (composed, decomposed) = ("\u{E9}", "e\u{301}")
            let file =
                #"{"format": "keychain-cli-export", "version": 1, "items": ["#
                + #"{"service": "twins", "key": "\#(composed)", "encoding": "utf8", "secret": "one"},"#
                + #"{"service": "twins", "key": "\#(decomposed)", "encoding": "utf8", "secret": "two"}]}"#
            let imported = try cli(["-s", "twins", "import"], input: file)
            #expect(imported.status == 0, "\(imported.stderr)")
            let template = "{{ keychain://twins/\(composed) }}|{{ keychain://twins/\(decomposed) }}"
            #expect(try cli(["inject"], input: template).stdoutText == "one|two")
            #expect(try cli(["-s", "twins", "list"]).stdoutText.split(separator: "\n").count == 2)
        }
    }
}
