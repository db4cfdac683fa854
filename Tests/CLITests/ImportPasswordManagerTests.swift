import Foundation
import TestSupport
import Testing

/// `import --format pass|bitwarden` against the real tools: a store made by `pass init` and
/// `pass insert` under a throwaway GNUPGHOME, decrypted by the real gpg and gpg-agent; a
/// Bitwarden export written from its documented format, cross-checked with pass-import.
@Suite("import from pass and Bitwarden", .keyringSession)
struct ImportPasswordManagerTests {
    /// A throwaway gpg home with one key without a passphrase, and a pass store initialised to it.
    struct PassStoreFixture {
        let scratch: ScratchDirectory
        var gnupgHome: String { scratch.url.appendingPathComponent("gnupg").path }
        var store: String { scratch.url.appendingPathComponent("store").path }
        var environment: [String: String] { ["GNUPGHOME": gnupgHome, "PASSWORD_STORE_DIR": store] }

        init() throws {
            scratch = try ScratchDirectory("pass-import")
            try FileManager.default.createDirectory(atPath: gnupgHome, withIntermediateDirectories: true)
            chmod(gnupgHome, 0o700)
            try run(
                "gpg",
                [
                    "--batch", "--passphrase", "", "--quick-gen-key", "Test <test@example.com>", "future-default",
                    "default", "never",
                ])
            try run("pass", ["init", "test@example.com"])
        }

        @discardableResult
        func run(_ tool: String, _ arguments: [String], input: String? = nil) throws -> ProcessResult {
            var environment = ProcessInfo.processInfo.environment
            environment.merge(self.environment) { _, new in new }
            let result = try runProcess(
                "/usr/bin/env", [tool] + arguments, stdin: input.map { Data($0.utf8) }, environment: environment,
                timeout: 60)
            guard result.status == 0 else { throw ToolFailed(description: "\(tool) \(arguments): \(result.stderr)") }
            return result
        }

        func insert(_ name: String, _ text: String) throws {
            try run("pass", ["insert", "-m", "-f", "--", name], input: text)
        }

        func stop() {
            _ = try? run("gpgconf", ["--kill", "gpg-agent"])
            scratch.remove()
        }
    }

    /// Entries as pass users keep them, on every backend: each stored exactly as `pass show` prints
    /// it, its fields and TOTP read back, and an export → reset → import round trip loses nothing.
    @Test(arguments: CLIBackend.allCases)
    func aPassStoreImportsExactlyOnEveryBackend(on backend: CLIBackend) throws {
        let fixture = try PassStoreFixture()
        defer { fixture.stop() }
        let entries = [
            "web/github": "gh-pass\nlogin: alice\nurl: https://github.com\notpauth://totp/gh?secret=JBSWY3DPEHPK3PXP\n",
            "email/work mail": "pw with spaces\n\nnotes after a blank line\nsecond line",
            "-leading dash": "x",
            "ünïcode/日本": "秘密",
            "a..b": "dots",
            "empty-password": "\nusername: bob",
        ]
        for (name, text) in entries { try fixture.insert(name, text) }
        try backend.run {
            let service = "pass-\(backend.rawValue)"
            let imported = try cli(["-s", service, "import", "--format", "pass"], extra: fixture.environment)
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(imported.stdoutText == "added \(entries.count), replaced 0, skipped 0\n")
            for (name, text) in entries {
                let shown = try fixture.run("pass", ["show", "--", name]).stdout
                #expect(try cli(["-s", service, "get", "--", name]).stdout == shown, "\(name)")
                #expect(shown == Data(text.utf8), "pass show prints what was inserted")
            }
            #expect(try cli(["-s", service, "get", "web/github", "--field", "login"]).stdoutText == "alice")
            #expect(try cli(["-s", service, "get", "web/github", "--field", "password"]).stdoutText == "gh-pass")
            #expect(try cli(["-s", service, "otp", "web/github", "--at", "59"]).stdoutText == "996554\n")
            #expect(
                try cli(["-s", service, "get", "email/work mail", "--field", "notes"]).stdoutText
                    == "notes after a blank line\nsecond line")
            let missing = try cli(["-s", service, "get", "web/github", "--field", "pin"])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("password, 'login', 'url', otp") && !missing.stderr.contains("gh-pass"))
            // Nothing lost through export and import on this backend.
            let exported = try cli(["-s", service, "export", "--yes"]).stdout
            #expect(try cli(["-s", service, "reset", "--yes"]).status == 0)
            #expect(try cli(["import"], stdin: exported).status == 0)
            for (name, text) in entries { #expect(try cli(["-s", service, "get", "--", name]).stdoutText == text) }
            _ = try cli(["-s", service, "reset", "--yes"])
        }
    }

    /// What can go wrong with a store stops the import before anything is stored, with its own
    /// exit code and a message naming the entry, never a secret.
    @Test func aStoreThatCannotBeReadWhollyStoresNothing() throws {
        let fixture = try PassStoreFixture()
        defer { fixture.stop() }
        try fixture.insert("ok", "fine-secret")
        try CLIBackend.withVault { _ in
            // A folder whose .gpg-id names a key this keyring has no secret part of.
            let other = try ScratchDirectory("other-gnupg")
            defer { other.remove() }
            chmod(other.url.path, 0o700)
            var environment = ProcessInfo.processInfo.environment
            environment["GNUPGHOME"] = other.url.path
            _ = try runProcess(
                "/usr/bin/gpg",
                [
                    "--batch", "--passphrase", "", "--quick-gen-key", "Other <o@example.com>", "future-default",
                    "default", "never",
                ],
                environment: environment, timeout: 60)
            let exportedKey = try runProcess(
                "/usr/bin/gpg", ["--armor", "--export", "o@example.com"], environment: environment, timeout: 60)
            try fixture.run("gpg", ["--import"], input: String(decoding: exportedKey.stdout, as: UTF8.self))
            let folder = fixture.store + "/theirs"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            _ = try runProcess(
                "/usr/bin/gpg",
                [
                    "--batch", "--yes", "--trust-model", "always", "-e", "-r", "o@example.com", "-o",
                    folder + "/locked.gpg",
                ],
                stdin: Data("their-secret".utf8), environment: environment, timeout: 60)
            let denied = try cli(["import", "--format", "pass"], extra: fixture.environment)
            #expect(denied.status == 77, "\(denied.stderr)")
            #expect(denied.stderr.contains("'theirs/locked'") && denied.stderr.contains("nothing was stored"))
            #expect(!denied.stderr.contains("their-secret"), "\(denied.stderr)")
            #expect(try cli(["get", "ok"]).status == 1, "nothing stored")
            try FileManager.default.removeItem(atPath: folder)

            // A symbolic link out of the store is refused; one inside it is an entry under two names.
            try FileManager.default.createSymbolicLink(
                atPath: fixture.store + "/out.gpg", withDestinationPath: "/etc/hostname")
            let outside = try cli(["import", "--format", "pass"], extra: fixture.environment)
            #expect(outside.status == 65 && outside.stderr.contains("'out'"), "\(outside.stderr)")
            try FileManager.default.removeItem(atPath: fixture.store + "/out.gpg")
            try FileManager.default.createSymbolicLink(
                atPath: fixture.store + "/alias.gpg", withDestinationPath: "ok.gpg")
            // A link to a folder of the store sorts before it: both names are entries (found once
            // only, under the link's, before), and a link back to a folder it is in stops there.
            try fixture.insert("in/target", "in-secret")
            try FileManager.default.createSymbolicLink(atPath: fixture.store + "/dirlink", withDestinationPath: "in")
            try FileManager.default.createSymbolicLink(atPath: fixture.store + "/in/loop", withDestinationPath: "..")
            let linked = try cli(["import", "--format", "pass"], extra: fixture.environment)
            #expect(linked.stdoutText == "added 4, replaced 0, skipped 0\n", "\(linked.stderr)")
            #expect(try cli(["get", "alias"]).stdoutText == "fine-secret")
            #expect(try cli(["get", "in/target"]).stdoutText == "in-secret")
            #expect(try cli(["get", "dirlink/target"]).stdoutText == "in-secret")

            // A link named as an entry that leads to nothing, and a name that is not UTF-8.
            try FileManager.default.createSymbolicLink(
                atPath: fixture.store + "/dead.gpg", withDestinationPath: "gone.gpg")
            let dead = try cli(["import", "--format", "pass", "--overwrite"], extra: fixture.environment)
            #expect(dead.status == 65 && dead.stderr.contains("'dead'"), "\(dead.stderr)")
            try FileManager.default.removeItem(atPath: fixture.store + "/dead.gpg")
            _ = try runProcess(
                "/bin/sh", ["-c", "cp \"$0/ok.gpg\" \"$0/$(printf 'caf\\351').gpg\"", fixture.store], environment: [:])
            let latin = try cli(["import", "--format", "pass", "--overwrite"], extra: fixture.environment)
            #expect(latin.status == 65 && latin.stderr.contains("not UTF-8"), "\(latin.stderr)")
            _ = try runProcess(
                "/bin/sh", ["-c", "rm \"$0/$(printf 'caf\\351').gpg\"", fixture.store], environment: [:])
            // --field reads UTF-8 text only; get prints any entry whole.
            _ = try cli(["set", "latin-1"], stdin: Data([0x63, 0x61, 0x66, 0xE9, 0x0A, 0x75, 0x3A, 0x20, 0x62]))
            let field = try cli(["get", "latin-1", "--field", "u"])
            #expect(field.status == 65 && field.stderr.contains("not UTF-8"), "\(field.stderr)")

            // No store there, and no gpg on PATH.
            let none = try cli(["import", "--format", "pass", fixture.store + "/nowhere"], extra: fixture.environment)
            #expect(none.status == 74, "\(none.stderr)")
            var noGPG = fixture.environment
            noGPG["PATH"] = "/nonexistent"
            let withoutGPG = try cli(["import", "--format", "pass", "--overwrite"], extra: noGPG)
            #expect(withoutGPG.status == 69 && withoutGPG.stderr.contains("gpg"), "\(withoutGPG.stderr)")
        }
    }

    /// A Bitwarden export on every backend: the entries as the layout says, the TOTP where otp
    /// reads it, two items of one name both kept, and the same fields pass-import finds.
    @Test(arguments: CLIBackend.allCases)
    func aBitwardenExportImportsOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("bitwarden")
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("bitwarden_export.json").path
        try Data(Self.bitwardenExport.utf8).write(to: URL(fileURLWithPath: file))
        try backend.run {
            let service = "bw-\(backend.rawValue)"
            // A key of the service that the numbering gives the second `github`: skipped like any
            // key already there, and replaced with --overwrite.
            _ = try cli(["-s", service, "set", "Dev/github (2)"], input: "mine")
            let dryRun = try cli(["-s", service, "import", "--format", "bitwarden", "--dry-run", file])
            #expect(dryRun.stdoutText.contains("skip \(service)/Dev/github (2)\n"), "\(dryRun.stdoutText)")
            let imported = try cli(["-s", service, "import", "--format", "bitwarden", file])
            #expect(
                imported.stdoutText == "added 2, replaced 0, skipped 1 (already there; --overwrite replaces them)\n",
                "\(imported.stderr)")
            #expect(imported.stderr.contains("'Dev/github'") && imported.stderr.contains("'Dev/github (2)'"))
            #expect(try cli(["-s", service, "get", "Dev/github (2)"]).stdoutText == "mine")
            // Run again, the import finds its items where it put them: nothing added.
            let again = try cli(["-s", service, "import", "--format", "bitwarden", file])
            #expect(again.stdoutText.hasPrefix("added 0, replaced 0, skipped 3"), "\(again.stdoutText)")
            let overwritten = try cli(["-s", service, "import", "--format", "bitwarden", "--overwrite", file])
            #expect(overwritten.stdoutText == "added 0, replaced 3, skipped 0\n", "\(overwritten.stderr)")
            #expect(
                try cli(["-s", service, "get", "Dev/github"]).stdoutText
                    == "gh-pw\nusername: octocat\nurl: https://github.com/login\nrecovery: \"code 1\\ncode 2\"\n"
                    + "otpauth://totp/github?secret=JBSWY3DPEHPK3PXP\n\nmy notes")
            #expect(
                try cli(["-s", service, "get", "Dev/github", "--field", "recovery"]).stdoutText == "code 1\ncode 2")
            #expect(try cli(["-s", service, "otp", "Dev/github", "--at", "59"]).stdoutText == "996554\n")
            #expect(try cli(["-s", service, "get", "Dev/github (2)", "--field", "username"]).stdoutText == "second")
            #expect(try cli(["-s", service, "get", "note"]).stdoutText == "\n\nonly notes")
            _ = try cli(["-s", service, "reset", "--yes"])
        }
        // pass-import reads the same file: the same password, login, URL, TOTP and notes.
        let script = """
            import json, sys
            from pass_import.managers.bitwarden import BitwardenJSON
            with BitwardenJSON(sys.argv[1]) as importer:
                importer.parse()
                print(json.dumps([{k: e.get(k) for k in ("title", "password", "login", "url", "otpauth", "comments")}
                                  for e in importer.data]))
            """
        let parsed = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, file], environment: ProcessInfo.processInfo.environment,
            timeout: 60)
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let theirs = try JSONSerialization.jsonObject(with: parsed.stdout) as? [[String: Any]] ?? []
        #expect(theirs.count == 3)
        #expect(theirs.first?["password"] as? String == "gh-pw" && theirs.first?["login"] as? String == "octocat")
        #expect(theirs.first?["url"] as? String == "https://github.com/login")
        #expect(
            theirs.first?["otpauth"] as? String == "JBSWY3DPEHPK3PXP"
                && theirs.first?["comments"] as? String == "my notes")
    }

    struct ToolFailed: Error, CustomStringConvertible {
        var description: String
    }

    static let bitwardenExport = #"""
        {"encrypted": false, "folders": [{"id": "d", "name": "Dev"}], "items": [
          {"id": "1", "folderId": "d", "type": 1, "name": "github", "notes": "my notes", "favorite": false,
           "fields": [{"name": "recovery", "value": "code 1\ncode 2", "type": 1}],
           "login": {"uris": [{"match": null, "uri": "https://github.com/login"}], "username": "octocat",
                     "password": "gh-pw", "totp": "JBSWY3DPEHPK3PXP"}, "collectionIds": null},
          {"id": "2", "folderId": "d", "type": 1, "name": "github", "notes": null, "favorite": false,
           "login": {"uris": [], "username": "second", "password": "pw2", "totp": null}, "collectionIds": null},
          {"id": "3", "folderId": null, "type": 2, "name": "note", "notes": "only notes", "favorite": false,
           "secureNote": {"type": 0}, "collectionIds": null}
        ]}
        """#
}
