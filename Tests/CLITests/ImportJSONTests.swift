import Foundation
import TestSupport
import Testing

/// `import --format enpass|dashlane|protonpass|1password|keepass` for the JSON and XML exports,
/// through the binary: files written from the documented formats (made-up values), cross-checked
/// with pass-import where it reads the format.
@Suite("import from JSON and XML exports", .keyringSession)
struct ImportJSONTests {
    static let enpass = #"""
        {"folders": [{"icon": "1", "parent_uuid": "", "title": "Work", "updated_at": 1, "uuid": "f1"}],
         "items": [
          {"archived": 0, "category": "login", "favorite": 0, "folders": ["f1"], "note": "n1", "title": "Server",
           "template_type": "login.default", "trashed": 0, "uuid": "i1",
           "fields": [{"deleted": 0, "label": "Username", "sensitive": 0, "type": "username", "value": "alice"},
                      {"deleted": 0, "label": "Password", "sensitive": 1, "type": "password", "value": "pw\nline 2"},
                      {"deleted": 0, "label": "Website", "sensitive": 0, "type": "url", "value": "https://a.example"},
                      {"deleted": 0, "label": "TOTP", "sensitive": 0, "type": "totp", "value": "JBSWY3DPEHPK3PXP"},
                      {"deleted": 0, "label": "Security answer", "sensitive": 1, "type": "text", "value": "=cmd|' /C calc'!A0"}],
           "attachments": [{"data": "aGVsbG8=", "kind": "text/plain", "name": "hello.txt", "size": 5, "uuid": "a1"},
                           {"kind": "image/png", "name": "big.png", "size": 9, "uuid": "a2"}]},
          {"title": "Gone", "trashed": 1, "note": "", "fields": [], "uuid": "i2"}
         ]}
        """#

    /// An Enpass export on every backend: the entry, its TOTP and its attachment stored, what is
    /// left out said on stderr, a formula-like value stored exactly.
    @Test(arguments: CLIBackend.allCases)
    func anEnpassExportImportsOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("enpass")
        defer { scratch.remove() }
        let file = scratch.path("export.json")
        try Data(Self.enpass.utf8).write(to: URL(fileURLWithPath: file))
        try backend.run {
            let service = "en-\(backend.rawValue)"
            let imported = try cli(["-s", service, "import", "--format", "enpass", file])
            #expect(imported.stdoutText == "added 2, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("'Gone'") && imported.stderr.contains("'big.png'"), "\(imported.stderr)")
            #expect(
                try cli(["-s", service, "get", "Work/Server"]).stdoutText
                    == "\"pw\\nline 2\"\nusername: alice\nurl: https://a.example\nSecurity answer: =cmd|' /C calc'!A0\n"
                    + "otpauth://totp/Server?secret=JBSWY3DPEHPK3PXP\n\nn1")
            #expect(try cli(["-s", service, "otp", "Work/Server", "--at", "59"]).stdoutText == "996554\n")
            #expect(try cli(["-s", service, "get", "Work/Server/hello.txt"]).stdoutText == "hello")
            _ = try cli(["-s", service, "reset", "--yes"])
        }
        // Not an Enpass export, and not JSON: 65, nothing stored.
        try Data(#"{"AUTHENTIFIANT": []}"#.utf8).write(to: URL(fileURLWithPath: file))
        let other = try cli(["-s", "en", "import", "--format", "enpass", file])
        #expect(other.status == 65 && other.stderr.contains("is not an Enpass JSON export"), "\(other.stderr)")
        try Data("{\"items\": [\n{\"title\": }]}".utf8).write(to: URL(fileURLWithPath: file))
        let broken = try cli(["-s", "en", "import", "--format", "enpass", file])
        #expect(broken.status == 65 && broken.stderr.contains("is not valid JSON (line 2"), "\(broken.stderr)")
        #expect(try cli(["-s", "en", "list"]).stdoutText == "")
    }

    /// A Proton Pass zip (python's zipfile, read by unzip) and a Dashlane JSON on the vault.
    @Test func aProtonPassZipAndADashlaneExportImport() throws {
        let scratch = try ScratchDirectory("proton")
        defer { scratch.remove() }
        let data = #"""
            {"version": "1.17.0", "encrypted": false, "vaults": {"s1": {"name": "Personal", "items": [
              {"itemId": "i1", "state": 1, "aliasEmail": null, "data": {"type": "login",
               "metadata": {"name": "Mail", "note": "my note"}, "extraFields": [],
               "content": {"itemUsername": "me", "itemEmail": "me@proton.me", "password": "pw",
                           "urls": ["https://mail.example"], "totpUri": "", "passkeys": []}}}]}}}
            """#
        let zip = scratch.path("pass.zip")
        let script = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("Proton Pass/data.json", sys.stdin.read())
            """
        let made = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, zip], stdin: Data(data.utf8),
            environment: ProcessInfo.processInfo.environment)
        #expect(made.status == 0, "\(made.stderr)")
        let dashlane = scratch.path("dashlane.json")
        try Data(Self.dashlane.utf8).write(to: URL(fileURLWithPath: dashlane))
        try CLIBackend.withVault { _ in
            let imported = try cli(["-s", "pp", "import", "--format", "protonpass", zip])
            #expect(imported.stdoutText == "added 1, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(
                try cli(["-s", "pp", "get", "Personal/Mail"]).stdoutText
                    == "pw\nusername: me\nurl: https://mail.example\nemail: me@proton.me\n\nmy note")
            let second = try cli(["-s", "dl", "import", "--format", "dashlane", dashlane])
            #expect(second.stdoutText == "added 2, replaced 0, skipped 0\n", "\(second.stderr)")
            #expect(
                try cli(["-s", "dl", "get", "Shop"]).stdoutText
                    == "p@ss\nusername: alice\nurl: https://shop.example\nemail: me@example.com\n\nline 1\nline 2")
            #expect(try cli(["-s", "dl", "get", "Secure notes/Wifi", "--field", "notes"]).stdoutText == "code 1234")
        }
    }

    static let dashlane = #"""
        {"AUTHENTIFIANT": [{"domain": "https://shop.example", "email": "me@example.com", "login": "alice",
                            "note": "line 1\nline 2", "password": "p@ss", "secondaryLogin": "", "title": "Shop"}],
         "SECURENOTE": [{"title": "Wifi", "content": "code 1234"}]}
        """#

    static let onePIF = [
        #"{"uuid":"A1","typeName":"webforms.WebForm","title":"Forum","location":"https://forum.example","trashed":false,"secureContents":{"fields":[{"designation":"username","name":"username","type":"T","value":"bob"},{"designation":"password","name":"","type":"P","value":"hunter2"}],"notesPlain":"hello"}}"#,
        #"{"uuid":"T1","typeName":"webforms.WebForm","title":"Binned","trashed":true,"secureContents":{}}"#,
    ].map { $0 + "\n***5642bee8-a5ff-11dc-8314-0800200c9a66***\n" }.joined()

    static let keepassx = """
        <!DOCTYPE KEEPASSX_DATABASE>
        <database><group><title>Internet</title><icon>1</icon>
         <entry><title>Webmail</title><username>alice</username><password>p&amp;w</password><url>https://mail.example</url>
          <comment>one<br/>two</comment><icon>1</icon><expire>Never</expire><bin>aGVsbG8=</bin><bindesc>hello.txt</bindesc></entry>
        </group></database>
        """

    /// KeePass 2's own XML export (File > Export > KeePass XML (2.x)): values in plain text,
    /// marked ProtectInMemory.
    static let keepass2 = """
        <?xml version="1.0" encoding="utf-8" standalone="yes"?>
        <KeePassFile><Meta><Generator>KeePass</Generator><Binaries /></Meta><Root><Group><UUID>AA==</UUID>
        <Name>keepass</Name><Group><UUID>AQ==</UUID><Name>Social</Name><Entry><UUID>Ag==</UUID>
        <String><Key>Notes</Key><Value>first&#xA;second</Value></String>
        <String><Key>Password</Key><Value ProtectInMemory="True">D&lt;INNeT?#</Value></String>
        <String><Key>Title</Key><Value>mastodon</Value></String>
        <String><Key>URL</Key><Value>https://mastodon.example/</Value></String>
        <String><Key>UserName</Key><Value>ostqxi</Value></String><History /></Entry></Group></Group></Root></KeePassFile>
        """

    /// A .1pif under --format 1password and KeePassX's XML under --format keepass, on the vault;
    /// a document type with entities is refused with nothing stored.
    @Test func aOnePIFAndAKeePassXExportImport() throws {
        let scratch = try ScratchDirectory("1pif")
        defer { scratch.remove() }
        let pif = scratch.path("data.1pif")
        try Data(Self.onePIF.utf8).write(to: URL(fileURLWithPath: pif))
        let xml = scratch.path("keepassx.xml")
        try Data(Self.keepassx.utf8).write(to: URL(fileURLWithPath: xml))
        let hostile = scratch.path("hostile.xml")
        try Data(
            Self.keepassx.replacingOccurrences(
                of: "<!DOCTYPE KEEPASSX_DATABASE>",
                with: "<!DOCTYPE KEEPASSX_DATABASE [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>"
            ).replacingOccurrences(of: "p&amp;w", with: "&e;").utf8
        ).write(to: URL(fileURLWithPath: hostile))
        try CLIBackend.withVault { _ in
            let imported = try cli(["-s", "op", "import", "--format", "1password", pif])
            #expect(imported.stdoutText == "added 1, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("'Binned' is in 1Password's trash"), "\(imported.stderr)")
            #expect(
                try cli(["-s", "op", "get", "Forum"]).stdoutText
                    == "hunter2\nusername: bob\nurl: https://forum.example\n\nhello")
            let kx = try cli(["-s", "kx", "import", "--format", "keepass", xml])
            #expect(kx.stdoutText == "added 2, replaced 0, skipped 0\n", "\(kx.stderr)")
            #expect(
                try cli(["-s", "kx", "get", "Internet/Webmail"]).stdoutText
                    == "p&w\nusername: alice\nurl: https://mail.example\n\none\ntwo")
            #expect(try cli(["-s", "kx", "get", "Internet/Webmail/hello.txt"]).stdoutText == "hello")
            let refused = try cli(["-s", "kh", "import", "--format", "keepass", hostile])
            #expect(refused.status == 65 && refused.stderr.contains("document type"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("root:"))
            #expect(try cli(["-s", "kh", "list"]).stdoutText == "")
        }
    }

    /// pass-import reads the same files: the same password, login, URL and notes for each (of a
    /// KeePassX comment with line breaks, pass-import keeps the first line).
    @Test(arguments: [
        ("dashlane", "DashlaneJSON", "json"), ("enpass", "Enpass6", "json"), ("onepassword", "OnePassword4PIF", "1pif"),
        ("keepassx", "KeepassxXML", "xml"), ("keepass", "KeepassXML", "xml"),
    ])
    func passImportReadsTheSame(module: String, importer: String, ext: String) throws {
        let scratch = try ScratchDirectory("pass-import-\(module)")
        defer { scratch.remove() }
        let text =
            ["dashlane": Self.dashlane, "enpass": Self.enpass, "onepassword": Self.onePIF, "keepass": Self.keepass2][
                module]
            ?? Self.keepassx
        let file = scratch.path("export.\(ext)")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let script = """
            import json, sys
            from pass_import.managers.\(module) import \(importer)
            with \(importer)(sys.argv[1]) as importer:
                importer.parse()
                print(json.dumps([{k: e.get(k) for k in ("title", "password", "login", "url", "comments")}
                                  for e in importer.data]))
            """
        let parsed = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, file], environment: ProcessInfo.processInfo.environment,
            timeout: 60)
        #expect(parsed.status == 0, "\(parsed.stderr)")
        let theirs = try JSONSerialization.jsonObject(with: parsed.stdout) as? [[String: Any]] ?? []
        let first = try #require(theirs.first { ($0["password"] as? String ?? "") != "" })
        let format = ["dashlane": "dashlane", "enpass": "enpass", "onepassword": "1password"][module] ?? "keepass"
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "pi", "import", "--format", format, file])
            let keys = try cli(["-s", "pi", "list"]).stdoutText.split(separator: "\n").map(String.init)
            let key = try #require(
                keys.first { $0.hasSuffix("/\(first["title"] as? String ?? "")") || $0 == first["title"] as? String })
            for (their, mine) in [
                ("password", "password"), ("login", "username"), ("url", "url"), ("comments", "notes"),
            ] {
                guard let value = first[their] as? String, !value.isEmpty else { continue }
                let ours = try cli(["-s", "pi", "get", key, "--field", mine]).stdoutText
                // pass-import keeps a KeePassX comment's text up to its first <br/> only.
                let same = module == "keepassx" && their == "comments" ? ours.hasPrefix(value + "\n") : ours == value
                #expect(same, "\(module): \(their)")
            }
        }
    }

    /// Every text export is read in UTF-16 with its byte order mark (as Windows' editors save it),
    /// as the CSVs are: a Bitwarden JSON export and a dotenv file; Latin-1 is refused with iconv.
    @Test func utf16JSONAndDotenvAreReadAndLatin1Refused() throws {
        let scratch = try ScratchDirectory("utf16-text")
        defer { scratch.remove() }
        func utf16(_ text: String) -> Data {
            Data([0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        }
        let bitwarden = scratch.path("bitwarden.json")
        try utf16(#"{"encrypted": false, "items": [{"type": 1, "name": "café", "login": {"password": "pässwörd"}}]}"#)
            .write(to: URL(fileURLWithPath: bitwarden))
        let dotenv = scratch.path("win.env")
        try utf16("TOKEN=tökén\r\n").write(to: URL(fileURLWithPath: dotenv))
        let latin1 = scratch.path("latin1.env")
        try Data([0x54, 0x3D, 0xE9, 0x0A]).write(to: URL(fileURLWithPath: latin1))
        try CLIBackend.withVault { _ in
            let imported = try cli(["-s", "u16", "import", "--format", "bitwarden", bitwarden])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(try cli(["-s", "u16", "get", "café"]).stdoutText == "pässwörd")
            #expect(try cli(["-s", "u16", "import", "--format", "env", dotenv]).status == 0)
            #expect(try cli(["-s", "u16", "get", "TOKEN"]).stdoutText == "tökén")
            let refused = try cli(["-s", "u16", "import", "--format", "env", latin1])
            #expect(refused.status == 65 && refused.stderr.contains("iconv -f latin1"), "\(refused.stderr)")
        }
    }
}
