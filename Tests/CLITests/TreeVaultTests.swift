import Foundation
import TestSupport
import Testing

/// The real age (Debian age 1.1.1).
func runAge(_ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    try runProcess("/usr/bin/age", arguments, stdin: stdin, environment: ["PATH": "/usr/bin:/bin"])
}

@Suite("Tree vaults: one age file per secret, in a directory git can keep")
struct TreeVaultTests {
    @Test func initWritesTheRecipientsAndRefusesAVaultAFileOrADirectoryInUse() throws {
        try TreeFixture.run { tree in
            #expect(try String(contentsOfFile: tree.vault + "/.recipients", encoding: .utf8) == tree.recipient + "\n")
            let folder = try FileManager.default.attributesOfItem(atPath: tree.vault)
            #expect((folder[.posixPermissions] as? Int) == 0o700)
            let again = try cli(["vault", "init", "--recipient", tree.recipient], session: nil)
            #expect(again.status == 64 && again.stderr.contains("tree vault already"), "\(again.stderr)")
            let used = tree.scratch.path("used")
            try FileManager.default.createDirectory(atPath: used + "/src", withIntermediateDirectories: true)
            let inUse = try cli(["vault", "init", used, "--recipient", tree.recipient], session: nil)
            #expect(inUse.status == 64 && inUse.stderr.contains("is not empty"), "\(inUse.stderr)")
            #expect(!FileManager.default.fileExists(atPath: used + "/.recipients"))
            // A directory with only a .git is fine: a vault at the top of its own repository.
            let repository = tree.scratch.path("repository")
            try FileManager.default.createDirectory(atPath: repository + "/.git", withIntermediateDirectories: true)
            #expect(try cli(["vault", "init", repository, "--recipient", tree.recipient], session: nil).status == 0)
            // A private key where a recipient goes is refused without being repeated.
            let secretKey = try String(contentsOfFile: tree.identity, encoding: .utf8).split(separator: "\n").last!
            let keyed = try cli(
                ["vault", "init", tree.scratch.path("k"), "--recipient", String(secretKey)], session: nil)
            #expect(keyed.status == 64 && !keyed.stderr.contains(String(secretKey.suffix(20))), "\(keyed.stderr)")
        }
    }

    /// Every name a key may hold maps to one file by the documented rule, reads back exactly,
    /// and opens with stock age to a document naming it; two spellings never share a file.
    @Test func namesAreEscapedReversiblyAndStockAgeOpensEveryItem() throws {
        try TreeFixture.run { tree in
            let names: [(key: String, file: String)] = [
                ("plain-Key_1.x@y+z,=~", "plain-Key_1.x@y+z,=~.age"), ("a/b", "a%2Fb.age"),
                (".hidden", "%2Ehidden.age"),
                ("..", "%2E..age"), ("50%", "50%25.age"), ("two words", "two%20words.age"),
                ("crlf\r\n", "crlf%0D%0A.age"),
                ("\u{1}bell", "%01bell.age"), ("é", "%C3%A9.age"), ("e\u{301}", "e%CC%81.age"), ("%2F", "%252F.age"),
            ]
            for (index, name) in names.enumerated() {
                let set = try cli(["-s", "svc/one", "set", name.key], input: "value \(index)")
                #expect(set.status == 0, "\(name.key): \(set.stderr)")
            }
            let files = try FileManager.default.contentsOfDirectory(atPath: tree.vault + "/svc%2Fone").sorted()
            #expect(files == names.map(\.file).sorted())
            let listed = try cli(["-s", "svc/one", "list", "-0"]).stdoutText.split(separator: "\0").map(String.init)
            #expect(listed.sorted() == names.map(\.key).sorted())
            for (index, name) in names.enumerated() {
                #expect(try cli(["-s", "svc/one", "get", name.key]).stdoutText == "value \(index)", "\(name.key)")
                let opened = try runAge([
                    "-d", "-i", tree.identity, tree.item("svc%2Fone", String(name.file.dropLast(4))),
                ])
                #expect(opened.status == 0, "\(opened.stderr)")
                let document = try JSONSerialization.jsonObject(with: opened.stdout) as? [String: Any]
                #expect(document?["format"] as? String == "keychain-cli-vault-item")
                #expect(document?["service"] as? String == "svc/one" && document?["key"] as? String == name.key)
                #expect(document?["secret"] as? String == "value \(index)")
            }
            // A file of another spelling (lower-case hex, an escape of a kept byte) is not an item.
            for stray in ["a%2fb.age", "%61.age", "notes.txt", ".x.age"] {
                try Data("x".utf8).write(to: URL(fileURLWithPath: tree.vault + "/svc%2Fone/" + stray))
            }
            let again = try cli(["-s", "svc/one", "list", "-0"]).stdoutText.split(separator: "\0").map(String.init)
            #expect(again.sorted() == names.map(\.key).sorted())
            // A name too long for a file name is refused with what to do, and nothing is written.
            let long = String(repeating: "k", count: 252)
            let refused = try cli(["-s", "svc/one", "set", long], input: "v")
            #expect(refused.status == 64 && refused.stderr.contains("at most 251 bytes"), "\(refused.stderr)")
            #expect(try cli(["-s", "svc/one", "set", String(long.dropLast())], input: "v").status == 0)
        }
    }

    /// Items `age -R .recipients` wrote open; an item moved or copied to another name, one
    /// encrypted to a passphrase and a damaged one are refused (65), naming the file, not read.
    @Test func itemsAgeWroteOpenAndMovedOrDamagedItemsAreRefused() throws {
        try TreeFixture.run { tree in
            let document =
                #"{"format": "keychain-cli-vault-item", "version": 1, "service": "ci", "key": "made-by-age", "encoding": "utf8", "secret": "from age"}"#
            try FileManager.default.createDirectory(atPath: tree.vault + "/ci", withIntermediateDirectories: true)
            let made = try runAge(
                ["-e", "-R", tree.vault + "/.recipients", "-o", tree.item("ci", "made-by-age")],
                stdin: Data(document.utf8))
            #expect(made.status == 0, "\(made.stderr)")
            #expect(try cli(["-s", "ci", "get", "made-by-age"]).stdoutText == "from age")
            try FileManager.default.copyItem(atPath: tree.item("ci", "made-by-age"), toPath: tree.item("ci", "copied"))
            let moved = try cli(["-s", "ci", "get", "copied"])
            #expect(moved.status == 65 && moved.stderr.contains("not the one its path names"), "\(moved.stderr)")
            try Data("age-encryption.org/v1\n-> X25519 broken\n".utf8).write(
                to: URL(fileURLWithPath: tree.item("ci", "x")))
            #expect(try cli(["-s", "ci", "get", "x"]).status == 65)
            // The others still read, and list names every file that is an item.
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "copied\nmade-by-age\nx\n")
            // Symbolic links (git keeps them; a pull request may bring one) are neither read nor
            // written through: a service that links elsewhere, an item that does.
            let outside = tree.scratch.path("outside")
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: tree.vault + "/linked", withDestinationPath: outside)
            let viaService = try cli(["-s", "linked", "set", "k"], input: "v")
            #expect(viaService.status == 65 && viaService.stderr.contains("symbolic link"), "\(viaService.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
            try FileManager.default.createSymbolicLink(
                atPath: tree.item("ci", "alias"), withDestinationPath: tree.item("ci", "made-by-age"))
            #expect(try cli(["-s", "ci", "get", "alias"]).status == 65)
            #expect(try cli(["-s", "ci", "delete", "alias"]).status == 65)
            #expect(try cli(["-s", "ci", "get", "made-by-age"]).stdoutText == "from age")
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "copied\nmade-by-age\nx\n")
        }
    }

    /// A write changes its own file alone: the other items' bytes stay, and no temporary file
    /// is left; a delete removes the file and an emptied service's directory.
    @Test func aWriteTouchesOnlyItsOwnFileAndADeleteLeavesNoEmptyDirectory() throws {
        try TreeFixture.run { tree in
            for key in ["a", "b", "c"] { #expect(try cli(["-s", "ci", "set", key], input: key).status == 0) }
            let before = try ["a", "c"].map { try Data(contentsOf: URL(fileURLWithPath: tree.item("ci", $0))) }
            #expect(try cli(["-s", "ci", "set", "b"], input: "new b").status == 0)
            let after = try ["a", "c"].map { try Data(contentsOf: URL(fileURLWithPath: tree.item("ci", $0))) }
            #expect(before == after)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: tree.vault + "/ci").sorted() == [
                    "a.age", "b.age", "c.age",
                ])
            let mode = try FileManager.default.attributesOfItem(atPath: tree.item("ci", "b"))[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(try cli(["-s", "ci", "reset", "--yes"]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: tree.vault + "/ci"))
            #expect(try cli(["-s", "ci", "delete", "a"]).status == 1)
        }
    }

    /// Adding a recipient re-encrypts every item to them; removing one re-encrypts every item
    /// with new file keys, so that the removed identity opens none of them.
    @Test func recipientsAddAndRemoveReencryptEveryItem() throws {
        try TreeFixture.run { tree in
            let other = tree.scratch.path("other.txt")
            let otherRecipient = try cli(["vault", "keygen", "-o", other], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            for key in ["a", "b"] { #expect(try cli(["-s", "ci", "set", key], input: "v-\(key)").status == 0) }
            #expect(try runAge(["-d", "-i", other, tree.item("ci", "a")]).status != 0)
            let added = try cli(["vault", "recipients", "add", otherRecipient])
            #expect(added.status == 0, "\(added.stderr)")
            for key in ["a", "b"] {
                #expect(try runAge(["-d", "-i", other, tree.item("ci", key)]).status == 0)
            }
            #expect(try cli(["vault", "recipients", "list"]).stdoutText == "\(tree.recipient)\n\(otherRecipient)\n")
            let removed = try cli(["vault", "recipients", "remove", otherRecipient])
            #expect(removed.status == 0, "\(removed.stderr)")
            for key in ["a", "b"] {
                #expect(try runAge(["-d", "-i", other, tree.item("ci", key)]).status != 0)
                #expect(try cli(["-s", "ci", "get", key]).stdoutText == "v-\(key)")
            }
            #expect(try String(contentsOfFile: tree.vault + "/.recipients", encoding: .utf8) == tree.recipient + "\n")
            let last = try cli(["vault", "recipients", "remove", tree.recipient])
            #expect(last.status == 64)
        }
    }

    /// A passphrase tree vault: the passphrase opens its identity, which opens every item (one
    /// scrypt per process); a wrong one is 77; `vault passwd` re-encrypts the identity alone.
    @Test func aPassphraseTreeVaultOpensWithItsPassphraseAndPasswdChangesOnlyItsIdentity() throws {
        try CLIBackend.withTreeVault { vault in
            #expect(FileManager.default.fileExists(atPath: vault + "/.identity.age"))
            #expect(try cli(["-s", "ci", "set", "k"], input: "v").status == 0)
            let item = try Data(contentsOf: URL(fileURLWithPath: vault + "/ci/k.age"))
            let wrong = try cli(["-s", "ci", "get", "k"], extra: ["KEYCHAIN_PASSPHRASE": "wrong"])
            #expect(wrong.status == 77, "\(wrong.stderr)")
            let changed = try cli(["vault", "passwd"], extra: ["KEYCHAIN_NEW_PASSPHRASE": "new one"])
            #expect(changed.status == 0, "\(changed.stderr)")
            #expect(try cli(["-s", "ci", "get", "k"]).status == 77)
            #expect(try cli(["-s", "ci", "get", "k"], extra: ["KEYCHAIN_PASSPHRASE": "new one"]).stdoutText == "v")
            #expect(try Data(contentsOf: URL(fileURLWithPath: vault + "/ci/k.age")) == item)
        }
    }

    /// doctor checks the directory, the recipients, the identity, and opens every item: a
    /// damaged one fails it (65), named.
    @Test func doctorOpensEveryItemAndNamesADamagedOne() throws {
        try TreeFixture.run { tree in
            #expect(try cli(["-s", "ci", "set", "a"], input: "v").status == 0)
            let healthy = try cli(["doctor"])
            #expect(healthy.status == 0, "\(healthy.stdoutText)")
            #expect(healthy.stdoutText.contains("decrypted: 1 item in 1 service"))
            #expect(healthy.stdoutText.contains("\(tree.recipient) (from $KEYCHAIN_IDENTITY"))
            try Data("damaged".utf8).write(to: URL(fileURLWithPath: tree.item("ci", "b")))
            let damaged = try cli(["doctor"])
            #expect(damaged.status == 65 && damaged.stdoutText.contains("ci/b.age"), "\(damaged.stdoutText)")
            let stranger = tree.scratch.path("stranger.txt")
            #expect(try cli(["vault", "keygen", "-o", stranger], session: nil).status == 0)
            let refused = try cli(["doctor"], extra: ["KEYCHAIN_IDENTITY": stranger])
            #expect(refused.status == 77, "\(refused.stdoutText)")
        }
    }
}
