import Foundation
import TestSupport
import Testing

@Suite("export and import", .keyringSession)
final class ExportImportTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory("export")
    }

    deinit { scratch.remove() }

    private func path(_ name: String) -> String { scratch.path(name) }

    @Test func secretsMoveFromTheVaultToTheKeyringAndBackUnchanged() throws {
        let s = uniqueService()
        let keyring = [
            "KEYCHAIN_BACKEND": "secret-service", "DBUS_SESSION_BUS_ADDRESS": KeyringSession.current!.busAddress,
        ]
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", s, "set", "text"], input: "héllo")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255, 1]))
            let fromVault = try cli(["-s", s, "export", "--yes"])
            #expect(fromVault.status == 0)
            let imported = try cli(["import"], stdin: fromVault.stdout, extra: keyring)
            #expect(imported.stdoutText == "added 2, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["-s", s, "get", "bin"], extra: keyring).stdout == Data([0, 255, 1]))
            #expect(try cli(["-s", s, "reset", "--yes"]).status == 0)
            let fromKeyring = try cli(["-s", s, "export", "--yes"], extra: keyring)
            #expect(try cli(["import"], stdin: fromKeyring.stdout).status == 0)
            #expect(try cli(["-s", s, "export", "--yes"]).stdout == fromVault.stdout)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func exportResetImportGivesBackIdenticalItemsIncludingBinary(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "text"], input: "héllo \"quoted\" $HOME")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255, 10, 0x80]))
            _ = try cli(["-s", s, "set", "with/slash"], input: "v")
            _ = try cli(["-s", s, "set", "empty", "--allow-empty"], stdin: Data())
            let before = try cli(["-s", s, "export", "--yes"])
            #expect(before.status == 0, "\(before.stderr)")
            let document = try JSONSerialization.jsonObject(with: before.stdout) as! [String: Any]
            #expect(document["format"] as? String == "keychain-cli-export")
            #expect(document["version"] as? Int == 1)
            #expect((document["items"] as? [Any])?.count == 4)
            #expect(try cli(["-s", s, "reset", "--yes"]).status == 0)
            // The empty secret is refused as set refuses one, and nothing is stored, until asked for.
            let refused = try cli(["import"], stdin: before.stdout)
            #expect(refused.status == 65 && refused.stderr.contains("Pass --allow-empty"), "\(refused.stderr)")
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
            let imported = try cli(["import", "--allow-empty"], stdin: before.stdout)
            #expect(imported.stdoutText == "added 4, replaced 0, skipped 0\n")
            #expect(try cli(["-s", s, "export", "--yes"]).stdout == before.stdout)
            #expect(try cli(["-s", s, "get", "bin"]).stdout == Data([0, 255, 10, 0x80]))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func aThousandItemsRoundTripInOneProcessEach(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let items = (0..<1000).map {
                ["service": s, "key": "key-\($0)", "encoding": "utf8", "secret": "value-\($0)"]
            }
            let file = try JSONSerialization.data(withJSONObject: [
                "format": "keychain-cli-export", "version": 1, "items": items,
            ])
            let first = try cli(["import"], stdin: file, timeout: 300)
            #expect(first.stdoutText == "added 1000, replaced 0, skipped 0\n", "\(first.stderr)")
            let exported = try cli(["-s", s, "export", "--yes", "-o", path("all.json")], timeout: 300)
            #expect(exported.status == 0)
            #expect(
                try cli(["-s", s, "reset", "--yes"], timeout: 300).stdoutText
                    == "removed 1000 secrets of service '\(s)'\n")
            #expect(
                try cli(["import", path("all.json")], timeout: 300).stdoutText == "added 1000, replaced 0, skipped 0\n")
            let again = try cli(["-s", s, "export", "--yes"], timeout: 300)
            #expect(again.stdout == (try Data(contentsOf: URL(fileURLWithPath: path("all.json")))))
            #expect(try cli(["-s", s, "get", "key-999"]).stdoutText == "value-999")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func importShowsProgressAtATerminalOnly(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let items = (0..<25).map { ["service": s, "key": "k\($0)", "encoding": "utf8", "secret": "v"] }
            let file = path("progress.json")
            try JSONSerialization.data(withJSONObject: ["format": "keychain-cli-export", "version": 1, "items": items])
                .write(to: URL(fileURLWithPath: file))
            let terminal = try expect(
                """
                spawn $env(KEYCHAIN_CLI) import \(file)
                expect "importing 25/25"
                expect "added 25, replaced 0, skipped 0"
                expect eof
                catch wait status
                exit [lindex $status 3]
                """)
            #expect(terminal.status == 0, "\(terminal.stdoutText)")
            // The Secret Service stores item by item; the vault writes all 25 at once, OpenBao
            // the keys of one service in one request (250 at most).
            #expect(
                terminal.stdoutText.contains(backend == .secretService ? "importing 1/25" : "importing 25/25"))
            let piped = try cli(["import", "--overwrite", file])
            #expect(!piped.stderr.contains("importing"))
            #expect(piped.stdoutText == "added 0, replaced 25, skipped 0\n", "\(piped.status): \(piped.stderr)")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func existingItemsAreSkippedUnlessOverwriteAndDryRunChangesNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "a"], input: "old")
            let document = """
                {"format": "keychain-cli-export", "version": 1, "items": [
                  {"service": "\(s)", "key": "a", "encoding": "utf8", "secret": "new"},
                  {"service": "\(s)", "key": "b", "encoding": "utf8", "secret": "b"}]}
                """
            let dry = try cli(["import", "--dry-run"], input: document)
            #expect(
                dry.stdoutText
                    == "skip \(s)/a\nadd \(s)/b\nwould add 1, replace 0, skip 1 (already there; --overwrite replaces them)\n"
            )
            #expect(try cli(["-s", s, "list"]).stdoutText == "a\n")
            let plain = try cli(["import"], input: document)
            #expect(plain.stdoutText == "added 1, replaced 0, skipped 1 (already there; --overwrite replaces them)\n")
            #expect(try cli(["-s", s, "get", "a"]).stdoutText == "old")
            let forced = try cli(["import", "--overwrite"], input: document)
            #expect(forced.stdoutText == "added 0, replaced 2, skipped 0\n")
            #expect(try cli(["-s", s, "get", "a"]).stdoutText == "new")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func envFormatMapsKeysQuotesValuesAndReadsBack(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let target = uniqueService()
            _ = try cli(["-s", s, "set", "github-token"], input: "tok")
            _ = try cli(["-s", s, "set", "9lives"], input: "line1\nline2 \"q\" $x \\ end")
            let env = try cli(["-s", s, "export", "--format", "env", "--yes"])
            #expect(env.stdoutText == "_9LIVES=\"line1\\nline2 \\\"q\\\" \\$x \\\\ end\"\nGITHUB_TOKEN=\"tok\"\n")
            #expect(try cli(["-s", target, "import", "--format", "env"], stdin: env.stdout).status == 0)
            #expect(try cli(["-s", target, "get", "_9LIVES"]).stdoutText == "line1\nline2 \"q\" $x \\ end")
            let plain = try cli(
                ["-s", target, "import"],
                input: "# comment\nexport PLAIN=as is\nSINGLE='no $escapes\\n'\nNOTED=\"kept\"  # a note\n")
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(try cli(["-s", target, "get", "PLAIN"]).stdoutText == "as is")
            #expect(try cli(["-s", target, "get", "SINGLE"]).stdoutText == "no $escapes\\n")
            #expect(try cli(["-s", target, "get", "NOTED"]).stdoutText == "kept")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func envExportRefusesBinaryAndCollisions(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0xff]))
            #expect(try cli(["-s", s, "export", "--format", "env", "--yes"]).status == 65)
            let other = uniqueService()
            _ = try cli(["-s", other, "set", "a-b"], input: "1")
            _ = try cli(["-s", other, "set", "a.b"], input: "2")
            let collision = try cli(["-s", other, "export", "--format", "env", "--yes"])
            #expect(collision.status == 65)
            #expect(collision.stderr.contains("both become A_B"))
            #expect(collision.stdout.isEmpty)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func exportNeedsYesOutsideATerminalAndWritesA0600File(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "SECRET-VALUE")
            let refused = try cli(["-s", s, "export"])
            #expect(refused.status == 64)
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr.contains("Pass --yes"))
            #expect(try cli(["-s", s, "export", "--yes", "-o", path("out.json")]).stdout.isEmpty)
            let mode = try FileManager.default.attributesOfItem(atPath: path("out.json"))[.posixPermissions] as? Int
            #expect(mode == 0o600)
            #expect(try String(contentsOfFile: path("out.json"), encoding: .utf8).contains("SECRET-VALUE"))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func badFilesNameTheLineOrItemAndStoreNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let cases: [(String, String)] = [
                ("A=1\nnot a mapping\n", "standard input:2: expected NAME=value"),
                ("A=1\n1BAD=2\n", "standard input:2: '1BAD' is not a valid variable name"),
                ("A=\"unterminated\n", "standard input:1: the value's closing \" is missing"),
                // Not `x" "y`, the line's first to last quote, as before.
                ("A=\"x\" \"y\"\n", "standard input:1: text follows the value's closing \""),
                ("A='it's'\n", "standard input:1: text follows the value's closing '"),
                (
                    #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"ok","encoding":"utf8","secret":"1"},{"service":"\#(s)","key":"x","encoding":"base64","secret":"%%"}]}"#,
                    "standard input: item 2: the secret does not decode as base64"
                ),
                (
                    #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"x","encoding":"utf9","secret":"1"}]}"#,
                    "standard input: item 1: the encoding 'utf9' is not one this version reads (utf8 or base64)"
                ),
                (
                    #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"","encoding":"utf8","secret":"1"}]}"#,
                    "standard input: item 1: invalid key"
                ),
                (
                    #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"x","encoding":"utf8","secret":"1",}]}"#,
                    "standard input, line 1: item 1 has a comma right before a closing bracket"
                ),
                (#"{"format":"other","version":1,"items":[]}"#, "is not one this version reads"),
                ("{ not json", "is not a keychain-cli export document"),
            ]
            for (input, message) in cases {
                let result = try cli(["-s", s, "import"], input: input)
                #expect(result.status == 65, "\(input): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(input): \(result.stderr)")
            }
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty, "a bad file stored something")
        }
    }
}
