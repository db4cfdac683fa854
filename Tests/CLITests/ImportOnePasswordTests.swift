import Foundation
import TestSupport
import Testing

/// `import --format 1password`: .1pux files (zips written by python's zipfile, read by the real
/// unzip) from 1Password's documented format, with their Document files.
@Suite("import from 1Password", .keyringSession)
struct ImportOnePasswordTests {
    /// Writes a .1pux at `path` holding `data` as export.data and each of `files` as a member.
    static func write1PUX(_ path: String, data: String, files: [String: Data] = [:]) throws {
        let script = """
            import json, sys, zipfile
            members = json.load(sys.stdin)
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("export.attributes", '{"version": 3}')
                for name, content in members.items():
                    z.writestr(name, bytes.fromhex(content))
            """
        var members = ["export.data": Data(data.utf8)]
        members.merge(files) { $1 }
        let hex = members.mapValues { $0.map { String(format: "%02x", $0) }.joined() }
        let made = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, path], stdin: try JSONSerialization.data(withJSONObject: hex),
            environment: ProcessInfo.processInfo.environment)
        #expect(made.status == 0, "\(made.stderr)")
    }

    /// A 1Password .1pux (a zip, deflated, written by python's zipfile) on every backend.
    @Test(arguments: CLIBackend.allCases)
    func aOnePasswordExportImportsOnEveryBackend(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("1pux")
        defer { scratch.remove() }
        let file = scratch.path("-export.1pux")
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "Private"}, "items": [{"state": "active", "categoryUuid": "001",
             "details": {"loginFields": [{"value": "me", "designation": "username"}, {"value": "pw\n2", "designation": "password"}],
                         "sections": [{"fields": [{"title": "code", "value": {"totp": "JBSWY3DPEHPK3PXP"}}]}],
                         "notesPlain": "n"},
             "overview": {"title": "site", "url": "https://example.com"}}]}]}]}
            """#
        try Self.write1PUX(file, data: data)
        try backend.run {
            let service = "op-\(backend.rawValue)"
            let imported = try cli(["-s", service, "import", "--format", "1password", file])
            #expect(imported.stdoutText == "added 1, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(
                try cli(["-s", service, "get", "Private/site"]).stdoutText
                    == "\"pw\\n2\"\nusername: me\nurl: https://example.com\notpauth://totp/site?secret=JBSWY3DPEHPK3PXP\n\nn"
            )
            #expect(try cli(["-s", service, "get", "Private/site", "--field", "password"]).stdoutText == "pw\n2")
            #expect(try cli(["-s", service, "otp", "Private/site", "--at", "59"]).stdoutText == "996554\n")
            _ = try cli(["-s", service, "reset", "--yes"])
        }
        // Not a zip, and a zip without export.data: 65, nothing stored.
        try Data("{}".utf8).write(to: URL(fileURLWithPath: scratch.path("plain.1pux")))
        let plain = try cli(["-s", "op", "import", "--format", "1password", scratch.path("plain.1pux")])
        #expect(plain.status == 65 && plain.stderr.contains("not a 1Password export"), "\(plain.stderr)")
        // Standard input may hold a .1pif or a CSV; empty, it is most often a failed export.
        let none = try cli(["-s", "op", "import", "--format", "1password"])
        #expect(none.status == 65 && none.stderr.contains("empty"), "\(none.stderr)")
        // A zip with a password: unzip may not ask for it (it runs away from the terminal).
        try Data("{}".utf8).write(to: URL(fileURLWithPath: scratch.path("export.data")))
        _ = try runProcess(
            "/usr/bin/zip", ["-q", "-j", "-P", "pw", scratch.path("locked.1pux"), scratch.path("export.data")],
            environment: [:])
        let locked = try cli(["-s", "op", "import", "--format", "1password", scratch.path("locked.1pux")])
        #expect(locked.status == 65 && locked.stderr.contains("password"), "\(locked.stderr)")
    }

    /// A Document item's file and a login's file field are stored beside their entry, byte for
    /// byte (a name with unzip's wildcard characters too); a file larger than a secret may be is
    /// named on stderr, not stored; a file export.data names that the zip lacks stores nothing.
    @Test func documentFilesAreStoredBesideTheirEntry() throws {
        let scratch = try ScratchDirectory("1pux-files")
        defer { scratch.remove() }
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "Private"}, "items": [
              {"categoryUuid": "006", "overview": {"title": "passport"},
               "details": {"notesPlain": "scan", "documentAttributes": {"fileName": "scan [1]*.pdf", "documentId": "d1",
                           "decryptedSize": 5}}},
              {"categoryUuid": "001", "overview": {"title": "server"},
               "details": {"loginFields": [{"value": "pw", "designation": "password"}],
                           "sections": [{"fields": [{"title": "key file", "value": {"file": {"fileName": "id_ed25519",
                                                     "documentId": "d2"}}},
                                                    {"title": "big", "value": {"file": {"fileName": "big.bin",
                                                     "documentId": "d3"}}}]}]}}]}]}]}
            """#
        let binary = Data([0, 1, 2, 0xFF, 10, 13, 0])
        let file = scratch.path("files.1pux")
        try Self.write1PUX(
            file, data: data,
            files: [
                "files/d1__scan [1]*.pdf": Data("%PDF-".utf8), "files/d2__id_ed25519": binary,
                "files/d3__big.bin": Data(count: (1 << 20) + 1),
            ])
        try CLIBackend.withVault { _ in
            let imported = try cli(["-s", "op", "import", "--format", "1password", file])
            #expect(imported.stdoutText == "added 4, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("the file 'big.bin', which is not imported: it is larger than 1 MiB"))
            #expect(
                try cli(["-s", "op", "list"]).stdoutText
                    == "Private/passport\nPrivate/passport/scan [1]*.pdf\nPrivate/server\nPrivate/server/id_ed25519\n")
            #expect(try cli(["-s", "op", "get", "Private/passport/scan [1]*.pdf"]).stdoutText == "%PDF-")
            #expect(try cli(["-s", "op", "get", "--raw", "Private/server/id_ed25519"]).stdout == binary)
            #expect(try cli(["-s", "op", "get", "Private/server", "--field", "key file"]).stdoutText == "id_ed25519")
            #expect(try cli(["-s", "op", "get", "Private/passport", "--field", "file"]).stdoutText == "scan [1]*.pdf")
            _ = try cli(["-s", "op", "reset", "--yes"])
            // export.data names a file the zip does not hold: nothing is stored.
            let cut = scratch.path("cut.1pux")
            try Self.write1PUX(cut, data: data, files: ["files/d1__scan [1]*.pdf": Data("%PDF-".utf8)])
            let refused = try cli(["-s", "op", "import", "--format", "1password", cut])
            #expect(
                refused.status == 65 && refused.stderr.contains("has no 'files/d2__id_ed25519'"), "\(refused.stderr)")
            #expect(try cli(["-s", "op", "list"]).stdoutText == "")
        }
    }

    /// Two files of one item with the same name: the second is `NAME (2)`, and the entry's field
    /// says so; a file whose key is another entry's, and a zip that holds a file twice, store
    /// nothing (65).
    @Test func fileNamesNeverPointAtAnotherSecret() throws {
        let scratch = try ScratchDirectory("1pux-names")
        defer { scratch.remove() }
        func item(_ title: String, files: [(name: String, id: String)]) -> String {
            let fields = files.map {
                #"{"title": "f", "value": {"file": {"fileName": "\#($0.name)", "documentId": "\#($0.id)"}}}"#
            }
            return
                #"{"overview": {"title": "\#(title)"}, "details": {"sections": [{"fields": [\#(fields.joined(separator: ", "))]}]}}"#
        }
        func data(_ items: [String]) -> String {
            #"{"accounts": [{"vaults": [{"attrs": {"name": "V"}, "items": [\#(items.joined(separator: ", "))]}]}]}"#
        }
        let twins = scratch.path("twins.1pux")
        try Self.write1PUX(
            twins, data: data([item("keys", files: [("id", "a"), ("id", "b")])]),
            files: ["files/a__id": Data("first".utf8), "files/b__id": Data("second".utf8)])
        try CLIBackend.withVault { _ in
            let imported = try cli(["-s", "op", "import", "--format", "1password", twins])
            #expect(imported.stdoutText == "added 3, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["-s", "op", "get", "V/keys", "--field", "f (2)"]).stdoutText == "id (2)")
            #expect(try cli(["-s", "op", "get", "V/keys/id"]).stdoutText == "first")
            #expect(try cli(["-s", "op", "get", "V/keys/id (2)"]).stdoutText == "second")
        }
        let clash = scratch.path("clash.1pux")
        try Self.write1PUX(
            clash,
            data: data([item("keys", files: [("id", "a")]), #"{"overview": {"title": "keys/id"}, "details": {}}"#]),
            files: ["files/a__id": Data("file".utf8)])
        let doubled = scratch.path("doubled.1pux")
        let script = """
            import sys, warnings, zipfile
            warnings.simplefilter("ignore")
            with zipfile.ZipFile(sys.argv[1], "w") as z:
                z.writestr("export.data", sys.argv[2])
                z.writestr("files/a__id", "one")
                z.writestr("files/a__id", "two")
            """
        _ = try runProcess(
            "/usr/bin/env", ["python3", "-c", script, doubled, data([item("keys", files: [("id", "a")])])],
            environment: ProcessInfo.processInfo.environment)
        try CLIBackend.withVault { _ in
            let clashed = try cli(["-s", "op2", "import", "--format", "1password", clash])
            #expect(clashed.status == 65 && clashed.stderr.contains("key of another entry"), "\(clashed.stderr)")
            let twice = try cli(["-s", "op2", "import", "--format", "1password", doubled])
            #expect(twice.status == 65 && twice.stderr.contains("twice"), "\(twice.stderr)")
            #expect(try cli(["-s", "op2", "list"]).stdoutText == "")
        }
    }
}
