import Foundation
import TestSupport
import Testing

/// `import --format keepassxc` against the real keepassxc-cli: a database made by
/// `keepassxc-cli import` from KeePass XML (keepassxc-cli 2.7's `add` cannot set a TOTP or custom
/// attributes), decrypted by `keepassxc-cli export`.
@Suite("import from KeePassXC", .keyringSession)
struct ImportKeePassTests {
    /// A scratch directory with `rich.kdbx` (password `db password`, in the file `password`).
    struct Fixture {
        let scratch: ScratchDirectory
        var database: String { scratch.path("rich.kdbx") }
        var passwordFile: String { scratch.path("password") }
        static let password = "db password"

        init(keyFileOnly: Bool = false) throws {
            scratch = try ScratchDirectory("keepass")
            let xml = scratch.path("rich.xml")
            try Data(ImportKeePassTests.xml.utf8).write(to: URL(fileURLWithPath: xml))
            try Data("\(Self.password)\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
            var arguments = ["import", "-q"]
            if keyFileOnly {
                try Data("a key file".utf8).write(to: URL(fileURLWithPath: scratch.path("key")))
                arguments += ["--set-key-file", scratch.path("key")]
            } else {
                arguments.append("-p")
            }
            let made = try runProcess(
                "/usr/bin/keepassxc-cli", arguments + [xml, database],
                stdin: Data("\(Self.password)\n\(Self.password)\n".utf8), environment: ["HOME": scratch.path("home")],
                timeout: 60)
            guard made.status == 0 else { throw ImportPasswordManagerTests.ToolFailed(description: made.stderr) }
        }
    }

    /// Every field of a KeePass entry on every backend: password first, username, both URLs, custom
    /// fields (one with a line break, one with `:` in its name and spaces around its value), tags,
    /// the TOTP (KeePassXC's `otp` and the older `TOTP Seed`), notes; nested groups with unicode,
    /// a title starting with `-`; neither the recycle bin nor the history.
    @Test(arguments: CLIBackend.allCases)
    func aDatabaseImportsWithEveryFieldOnEveryBackend(on backend: CLIBackend) throws {
        let fixture = try Fixture()
        defer { fixture.scratch.remove() }
        try backend.run {
            let service = "kp-\(backend.rawValue)"
            let imported = try cli([
                "-s", service, "import", "--format", "keepassxc", fixture.database, "--source-passphrase-file",
                fixture.passwordFile,
            ])
            #expect(imported.stdoutText == "added 3, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("the entry 'github' has the attachment 'id_rsa', which is not imported"))
            #expect(!imported.stderr.contains("p&ss"))
            #expect(
                try cli(["-s", service, "list"]).stdoutText
                    == "Email/Wörk mail/-leading dash\nEmail/Wörk mail/plain\ngithub\n")
            #expect(
                try cli(["-s", service, "get", "github"]).stdoutText
                    == "p&ss <w> ünï\nusername: alice\nurl: https://github.com/login\nurl (2): https://gist.github.com\n"
                    + "\"api: key\":   spaced  \nrecovery codes: \"aaaa-bbbb\\ncccc-dddd\"\ntag: ci\ntag (2): work\n"
                    + "previous password: oldpass\notpauth://totp/github:alice?secret=JBSWY3DPEHPK3PXP&period=30&digits=6&issuer=github\n\n"
                    + "line one\nline two\n")
            #expect(try cli(["-s", service, "get", "github", "--field", "api: key"]).stdoutText == "  spaced  ")
            #expect(
                try cli(["-s", service, "get", "github", "--field", "recovery codes"]).stdoutText
                    == "aaaa-bbbb\ncccc-dddd")
            #expect(try cli(["-s", service, "otp", "github", "--at", "59"]).stdoutText == "996554\n")
            // The older TOTP Seed with its "30;6" settings: oathtool's code for that seed at 59 s
            // (`oathtool --totp -b --now '1970-01-01 00:00:59 UTC' GEZDGNBVGY3TQOJQ`).
            #expect(
                try cli(["-s", service, "otp", "Email/Wörk mail/-leading dash", "--at", "59"]).stdoutText == "263420\n")
            #expect(try cli(["-s", service, "get", "Email/Wörk mail/plain"]).stdoutText == "only a password")
            // Nothing lost through export and import on this backend.
            let before = try cli(["-s", service, "get", "github"]).stdout
            let exported = try cli(["-s", service, "export", "--yes"]).stdout
            _ = try cli(["-s", service, "reset", "--yes"])
            #expect(try cli(["import"], stdin: exported).status == 0)
            #expect(try cli(["-s", service, "get", "github"]).stdout == before)
            _ = try cli(["-s", service, "reset", "--yes"])
        }
    }

    /// A database made the everyday way, with `keepassxc-cli db-create`, `mkdir` and `add`.
    @Test func aDatabaseMadeWithDbCreateAndAddImports() throws {
        let scratch = try ScratchDirectory("keepass-add")
        defer { scratch.remove() }
        let database = scratch.path("made.kdbx")
        func keepassxc(_ arguments: [String], input: String) throws {
            let run = try runProcess(
                "/usr/bin/keepassxc-cli", arguments, stdin: Data(input.utf8),
                environment: ["HOME": scratch.path("home")],
                timeout: 60)
            guard run.status == 0 else { throw ImportPasswordManagerTests.ToolFailed(description: run.stderr) }
        }
        try keepassxc(["db-create", "-q", "-p", database], input: "pw\npw\n")
        try keepassxc(["mkdir", "-q", database, "Servers"], input: "pw\n")
        try keepassxc(
            [
                "add", "-q", "-u", "admin", "--url", "ssh://db", "--notes", "rotate yearly", "-p", database,
                "Servers/db",
            ],
            input: "pw\ns3cret pass\n")
        try Data("pw\n".utf8).write(to: URL(fileURLWithPath: scratch.path("password")))
        try CLIBackend.withVault { _ in
            let imported = try cli([
                "-s", "kp", "import", "--format", "keepassxc", database, "--source-passphrase-file",
                scratch.path("password"),
            ])
            #expect(imported.stdoutText == "added 1, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(
                try cli(["-s", "kp", "get", "Servers/db"]).stdoutText
                    == "s3cret pass\nusername: admin\nurl: ssh://db\n\nrotate yearly")
        }
    }

    /// The password comes on a descriptor too, and a database opened by its key file alone takes
    /// an empty password (keepassxc-cli's --no-password); keepassxc-cli gets the password on its
    /// standard input, never in its arguments.
    @Test func thePasswordReachesKeepassxcCliOnItsInputOnly() throws {
        let fixture = try Fixture()
        defer { fixture.scratch.remove() }
        // A keepassxc-cli in front of the real one that records its arguments and input.
        let bin = fixture.scratch.path("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let recorder = """
            #!/bin/sh
            printf '%s\\n' "$@" > \(fixture.scratch.path("argv"))
            env > \(fixture.scratch.path("environment"))
            tee \(fixture.scratch.path("stdin")) | /usr/bin/keepassxc-cli "$@"
            """
        try Data(recorder.utf8).write(to: URL(fileURLWithPath: bin + "/keepassxc-cli"))
        chmod(bin + "/keepassxc-cli", 0o755)
        try CLIBackend.withVault { _ in
            let path = ["PATH": "\(bin):/usr/bin:/bin"]
            let imported = try runProcess(
                "/bin/sh",
                [
                    "-c", "exec \"$0\" -s kp import --format keepassxc \"$1\" --source-passphrase-fd 3 3<\"$2\"",
                    keychainCLIPath, fixture.database, fixture.passwordFile,
                ], environment: cliEnvironment().merging(path) { $1 })
            #expect(imported.status == 0, "\(imported.stderr)")
            let argv = try String(contentsOfFile: fixture.scratch.path("argv"), encoding: .utf8)
            let stdin = try String(contentsOfFile: fixture.scratch.path("stdin"), encoding: .utf8)
            #expect(argv == "export\n--format\nxml\n\(fixture.database)\n")
            #expect(stdin == "\(Fixture.password)\n")
            // Nor does it get the vault's passphrase from keychain-cli's environment (as for exec).
            let environment = try String(contentsOfFile: fixture.scratch.path("environment"), encoding: .utf8)
            #expect(!environment.contains("KEYCHAIN_PASSPHRASE=") && environment.contains("PATH="))
        }
        let keyOnly = try Fixture(keyFileOnly: true)
        defer { keyOnly.scratch.remove() }
        try Data().write(to: URL(fileURLWithPath: keyOnly.passwordFile))
        try CLIBackend.withVault { _ in
            let imported = try cli([
                "-s", "kp", "import", "--format", "keepassxc", keyOnly.database, "--source-key-file",
                keyOnly.scratch.path("key"), "--source-passphrase-file", keyOnly.passwordFile,
            ])
            #expect(imported.stdoutText == "added 3, replaced 0, skipped 0\n", "\(imported.stderr)")
        }
    }

    /// pass-import (with pykeepass) reads the same database: each field it finds in the entry has the
    /// same value in ours (its history and recycle bin, which it keeps as entries, are ours to leave out).
    @Test func passImportFindsTheSameFields() throws {
        let fixture = try Fixture()
        defer { fixture.scratch.remove() }
        // pass-import saves the database it read: it reads a copy.
        let copy = fixture.scratch.path("copy.kdbx")
        try FileManager.default.copyItem(atPath: fixture.database, toPath: copy)
        let script = """
            import getpass, json, sys
            getpass.getpass = lambda prompt="": sys.argv[2]
            from pass_import.managers.keepassxc import KeepassxcKDBX
            with KeepassxcKDBX(sys.argv[1]) as importer:
                importer.parse()
                print(json.dumps([e for e in importer.data if e.get("title") == "github" and not e.get("is_a_history_entry")]))
            """
        let parsed = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, copy, Fixture.password],
            environment: ProcessInfo.processInfo.environment, timeout: 60)
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let theirs = try #require((try JSONSerialization.jsonObject(with: parsed.stdout) as? [[String: Any]])?.first)
        let ours: [String: String] = [
            "password": "password", "login": "username", "url": "url", "KP2A_URL_1": "url (2)", "api: key": "api: key",
            "recovery codes": "recovery codes", "otpauth": "otp", "comments": "notes",
        ]
        try CLIBackend.withVault { _ in
            _ = try cli([
                "-s", "kp", "import", "--format", "keepassxc", fixture.database, "--source-passphrase-file",
                fixture.passwordFile,
            ])
            for (their, field) in ours {
                let value = try #require(theirs[their] as? String, "pass-import found no \(their)")
                let mine = try cli(["-s", "kp", "get", "github", "--field", field]).stdoutText
                #expect(mine == value || (field == "notes" && mine == value + "\n"), "\(their) → \(field)")
            }
            #expect(theirs["tags"] as? [String] == ["ci", "work"])
            #expect(try cli(["-s", "kp", "get", "github", "--field", "tag"]).stdoutText == "ci")
        }
    }

    /// Each failure its code and a message that says what to do, nothing stored.
    @Test func aDatabaseThatCannotBeReadStoresNothing() throws {
        let fixture = try Fixture()
        defer { fixture.scratch.remove() }
        let wrong = fixture.scratch.path("wrong")
        try Data("not it\n".utf8).write(to: URL(fileURLWithPath: wrong))
        let damaged = fixture.scratch.path("damaged.kdbx")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: fixture.database))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: damaged))
        try CLIBackend.withVault { _ in
            func importing(_ arguments: [String], extra: [String: String] = [:]) throws -> ProcessResult {
                try cli(["-s", "kp", "import", "--format", "keepassxc"] + arguments, extra: extra)
            }
            try Data("db password\nmore\n".utf8).write(to: URL(fileURLWithPath: fixture.scratch.path("two lines")))
            let twoLines = try importing([
                fixture.database, "--source-passphrase-file", fixture.scratch.path("two lines"),
            ])
            #expect(twoLines.status == 65 && twoLines.stderr.contains("holds a line break"), "\(twoLines.stderr)")
            #expect(!twoLines.stderr.contains("more"))
            let denied = try importing([fixture.database, "--source-passphrase-file", wrong])
            #expect(denied.status == 77 && denied.stderr.contains("wrong password or key file"), "\(denied.stderr)")
            #expect(!denied.stderr.contains("not it"))
            // No password given and no terminal to ask at (the runner has none).
            let unasked = try importing([fixture.database])
            #expect(unasked.status == 77 && unasked.stderr.contains("--source-passphrase-file"), "\(unasked.stderr)")
            let broken = try importing([damaged, "--source-passphrase-file", fixture.passwordFile])
            #expect(broken.status == 65 || broken.status == 77, "\(broken.stderr)")
            let missing = try importing([fixture.scratch.path("none.kdbx"), "--source-passphrase-file", wrong])
            #expect(missing.status == 74 && missing.stderr.contains("cannot read"), "\(missing.stderr)")
            #expect(try importing([]).status == 64)
            let noTool = try importing(
                [fixture.database, "--source-passphrase-file", fixture.passwordFile],
                extra: ["PATH": fixture.scratch.path("empty")])
            #expect(noTool.status == 69 && noTool.stderr.contains("keepassxc-cli is not installed"), "\(noTool.stderr)")
            let misplaced = try cli(["-s", "kp", "import", "--source-passphrase-file", fixture.passwordFile])
            #expect(misplaced.status == 64 && misplaced.stderr.contains("is for --format keepassxc"))
            #expect(try cli(["-s", "kp", "list"]).stdoutText == "")
        }
    }

    static let xml = """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <KeePassFile>
         <Meta><Generator>test</Generator><RecycleBinEnabled>True</RecycleBinEnabled>
          <RecycleBinUUID>SJrE/mbPSTeVwCpDfocxKw==</RecycleBinUUID></Meta>
         <Root>
          <Group>
           <UUID>mJMr2S7UQwe31K6G8OKCtg==</UUID><Name>Passwords</Name>
           <Entry>
            <UUID>EoD6gnuJQ7GL7qX1D0H8AA==</UUID><Tags>work;ci</Tags>
            <String><Key>Title</Key><Value>github</Value></String>
            <String><Key>UserName</Key><Value>alice</Value></String>
            <String><Key>Password</Key><Value ProtectInMemory="True">p&amp;ss &lt;w&gt; ünï</Value></String>
            <String><Key>URL</Key><Value>https://github.com/login</Value></String>
            <String><Key>KP2A_URL_1</Key><Value>https://gist.github.com</Value></String>
            <String><Key>Notes</Key><Value>line one
        line two
        </Value></String>
            <String><Key>otp</Key><Value>otpauth://totp/github:alice?secret=JBSWY3DPEHPK3PXP&amp;period=30&amp;digits=6&amp;issuer=github</Value></String>
            <String><Key>recovery codes</Key><Value ProtectInMemory="True">aaaa-bbbb
        cccc-dddd</Value></String>
            <String><Key>api: key</Key><Value>  spaced  </Value></String>
            <Binary><Key>id_rsa</Key><Value Ref="0"/></Binary>
            <History>
             <Entry><UUID>EoD6gnuJQ7GL7qX1D0H8AA==</UUID><String><Key>Title</Key><Value>github-old</Value></String>
              <String><Key>Password</Key><Value>oldpass</Value></String></Entry>
            </History>
           </Entry>
           <Group>
            <UUID>2PeRC3JwQXib4SCpwgnUAA==</UUID><Name>Email</Name>
            <Group>
             <UUID>3PeRC3JwQXib4SCpwgnUAA==</UUID><Name>Wörk mail</Name>
             <Entry>
              <UUID>FoD6gnuJQ7GL7qX1D0H8AA==</UUID>
              <String><Key>Title</Key><Value>-leading dash</Value></String>
              <String><Key>Password</Key><Value>x</Value></String>
              <String><Key>TOTP Seed</Key><Value>GEZDGNBVGY3TQOJQ</Value></String>
              <String><Key>TOTP Settings</Key><Value>30;6</Value></String>
             </Entry>
             <Entry>
              <UUID>GoD6gnuJQ7GL7qX1D0H8AA==</UUID>
              <String><Key>Title</Key><Value>plain</Value></String>
              <String><Key>Password</Key><Value>only a password</Value></String>
             </Entry>
            </Group>
           </Group>
           <Group>
            <UUID>SJrE/mbPSTeVwCpDfocxKw==</UUID><Name>Recycle Bin</Name>
            <Entry><UUID>hZIPsgCLT02ce070Gq1nLw==</UUID><String><Key>Title</Key><Value>deleted</Value></String>
             <String><Key>Password</Key><Value>gone</Value></String></Entry>
           </Group>
          </Group>
         </Root>
        </KeePassFile>
        """
}
