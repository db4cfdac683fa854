import Foundation
import TestSupport
import Testing

/// What a KeePass database holds beyond an entry's strings, through the real keepassxc-cli: a KDBX
/// 3.1 database (written by Tests/clients/make_kdbx31.py, which keepassxc-cli opens) whose export
/// holds its attachments' bytes, KeePass's own TOTP strings, the older passwords of the history,
/// and entries without a password, stored without --allow-empty.
@Suite("import from KeePass: attachments, history, TOTP", .keyringSession)
struct ImportKeePassHistoryTests {
    /// gzip.compress(b"\x00\x01binary\xff") and b"plain text\n", as KeePass's Meta keeps them.
    static let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <KeePassFile><Meta><Generator>KeePass</Generator><Binaries>
        <Binary ID="0" Compressed="True">H4sIAAAAAAAAA2NgTMrMSyyq/A8AKN9jOAkAAAA=</Binary>
        <Binary ID="1">cGxhaW4gdGV4dAo=</Binary></Binaries></Meta>
        <Root><Group><UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID><Name>Database</Name>
        <Group><UUID>AAAAAAAAAAAAAAAAAAAAAg==</UUID><Name>Web</Name>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID>
         <String><Key>Title</Key><Value>site</Value></String>
         <String><Key>Password</Key><Value>third</Value></String>
         <String><Key>TimeOtp-Secret-Base32</Key><Value>JBSWY3DPEHPK3PXP</Value></String>
         <String><Key>TimeOtp-Period</Key><Value>30</Value></String>
         <Binary><Key>id.bin</Key><Value Ref="0"/></Binary>
         <Binary><Key>notes.txt</Key><Value Ref="1"/></Binary>
         <History>
          <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID><String><Key>Title</Key><Value>site</Value></String>
           <String><Key>Password</Key><Value>first</Value></String></Entry>
          <Entry><UUID>AAAAAAAAAAAAAAAAAAAAAw==</UUID><String><Key>Title</Key><Value>site</Value></String>
           <String><Key>Password</Key><Value>second</Value></String></Entry>
         </History></Entry>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAABA==</UUID><String><Key>Title</Key><Value>title only</Value></String></Entry>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAABw==</UUID><String><Key>Title</Key><Value>steam</Value></String>
         <String><Key>otp</Key><Value>otpauth://totp/s?secret=JBSWY3DPEHPK3PXP&amp;encoder=steam</Value></String></Entry>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAABQ==</UUID><String><Key>Title</Key><Value>only a user</Value></String>
         <String><Key>UserName</Key><Value>bob</Value></String></Entry>
        <Entry><UUID>AAAAAAAAAAAAAAAAAAAABg==</UUID><String><Key>Title</Key><Value>a note</Value></String>
         <String><Key>Notes</Key><Value>just text</Value></String></Entry>
        </Group></Group></Root></KeePassFile>
        """

    @Test(arguments: CLIBackend.allCases)
    func aKDBX31DatabaseImportsWholeOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("kdbx31")
        defer { scratch.remove() }
        let maker = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../clients/make_kdbx31.py").standardized.path
        let made = try runProcess(
            "/usr/bin/env", ["python3", maker, "db password"], stdin: Data(Self.xml.utf8),
            environment: ProcessInfo.processInfo.environment)
        try #require(made.status == 0, "\(made.stderr)")
        let database = scratch.path("old.kdbx")
        try made.stdout.write(to: URL(fileURLWithPath: database))
        try Data("db password\n".utf8).write(to: URL(fileURLWithPath: scratch.path("password")))
        try backend.run {
            let service = "kp31-\(backend.rawValue)"
            let imported = try cli([
                "-s", service, "import", "--format", "keepassxc", database, "--source-passphrase-file",
                scratch.path("password"),
            ])
            // Five entries and two files; the four without a password need no --allow-empty.
            #expect(imported.stdoutText == "added 7, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(!imported.stderr.contains("not imported"), "\(imported.stderr)")
            #expect(
                try cli(["-s", service, "list"]).stdoutText
                    == "Web/a note\nWeb/only a user\nWeb/site\nWeb/site/id.bin\nWeb/site/notes.txt\nWeb/steam\n"
                    + "Web/title only\n")
            #expect(
                try cli(["-s", service, "get", "Web/site/id.bin"]).stdout == Data([0, 1] + "binary".utf8 + [0xFF]))
            #expect(try cli(["-s", service, "get", "Web/site/notes.txt"]).stdoutText == "plain text\n")
            #expect(try cli(["-s", service, "otp", "Web/site", "--at", "59"]).stdoutText == "996554\n")
            let older = ["previous password", "previous password (2)"].map {
                try? cli(["-s", service, "get", "Web/site", "--field", $0]).stdoutText
            }
            #expect(older == ["first", "second"])
            #expect(try cli(["-s", service, "get", "Web/site", "--field", "password"]).stdoutText == "third")
            #expect(try cli(["-s", service, "get", "Web/title only"]).stdoutText == "")
            #expect(try cli(["-s", service, "get", "Web/only a user", "--field", "username"]).stdoutText == "bob")
            #expect(try cli(["-s", service, "get", "Web/a note", "--field", "notes"]).stdoutText == "just text")
            // A Steam code is kept under otp as KeePassXC had it; otp says it cannot compute it.
            let steam = "otpauth://totp/s?secret=JBSWY3DPEHPK3PXP&encoder=steam"
            #expect(try cli(["-s", service, "get", "Web/steam", "--field", "otp"]).stdoutText == steam)
            let code = try cli(["-s", service, "otp", "Web/steam"])
            #expect(code.status == 65 && code.stderr.contains("get --field otp"), "\(code.stderr)")
            #expect(!code.stderr.contains("JBSWY3DP"))
            _ = try cli(["-s", service, "reset", "--yes"])
        }
    }

    /// An env file's empty value is still refused without --allow-empty: the rule stays for files
    /// of values, where an empty one is most often an unset variable.
    @Test func anEmptyValueOfAnEnvFileStillNeedsAllowEmpty() throws {
        try CLIBackend.withVault { _ in
            let refused = try cli(["-s", "e", "import", "--format", "env"], stdin: Data("A=1\nB=\n".utf8))
            #expect(refused.status == 65 && refused.stderr.contains("--allow-empty"), "\(refused.stderr)")
            #expect(try cli(["-s", "e", "list"]).stdoutText == "")
        }
    }
}
