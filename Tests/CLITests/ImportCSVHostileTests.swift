import Foundation
import TestSupport
import Testing

/// CSV exports that are not what they should be, through the binary: refused with a message
/// naming the line and what to do, never a value, and nothing stored; or, for what is only
/// unusual (UTF-16, CRLF, formulas, a Dashlane zip with cards), read exactly.
@Suite("import of hostile CSV files", .keyringSession)
struct ImportCSVHostileTests {
    func write(_ bytes: [UInt8], _ name: String, in scratch: ScratchDirectory) throws -> String {
        let path = scratch.url.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func brokenFilesStoreNothing() throws {
        let scratch = try ScratchDirectory("csv-hostile")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            let header = "name,url,username,password,note\n"
            let latin1 = try write(
                Array((header + "ok,https://ok.example,u,fine-secret,\nCaf").utf8) + [0xE9]
                    + Array(",https://c.example,u,latin-secret,\n".utf8), "latin1.csv", in: scratch)
            let refused = try cli(["import", "--format", "chrome", latin1])
            #expect(refused.status == 65, "\(refused.stderr)")
            #expect(refused.stderr.contains("is not UTF-8 (line 3)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("iconv -f latin1 -t utf-8"))
            #expect(!refused.stderr.contains("secret"))
            #expect(try cli(["get", "ok"]).status == 1, "nothing stored")

            let unclosed = try write(
                Array((header + "ok,https://ok.example,u,fine-secret,\n\"open,x,u,open-secret,\n").utf8), "open.csv",
                in: scratch)
            let open = try cli(["import", "--format", "chrome", unclosed])
            #expect(open.status == 65 && open.stderr.contains("line 3 opens a quoted cell that is never closed"))
            #expect(!open.stderr.contains("secret"))
            #expect(try cli(["get", "ok"]).status == 1)

            let short = try write(
                Array((header + "ok,https://ok.example,u,fine-secret,\nx,y\n").utf8), "s.csv", in: scratch)
            let cut = try cli(["import", "--format", "chrome", short])
            #expect(cut.status == 65 && cut.stderr.contains("line 3 has 2 cells where the first line has 5 columns"))
            #expect(try cli(["get", "ok"]).status == 1)

            let other = try write(
                Array(
                    "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
                        .utf8),
                "bw.csv", in: scratch)
            let wrong = try cli(["import", "--format", "lastpass", other])
            #expect(wrong.status == 65, "\(wrong.stderr)")
            #expect(
                wrong.stderr.contains("is not a LastPass CSV export") && wrong.stderr.contains("--format bitwarden"))

            let nul = try write(Array((header + "a,b,c,d\0e,\n").utf8), "nul.csv", in: scratch)
            #expect(try cli(["import", "--format", "chrome", nul]).stderr.contains("line 2 holds a NUL byte"))
        }
    }

    @Test func utf16CRLFAndFormulasAreReadExactly() throws {
        let scratch = try ScratchDirectory("csv-unusual")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            let text =
                "name,url,username,password,note\r\nformula,https://f.example,=cmd|' /C calc'!A0,@SUM(A1),\"-2+3\r\nline\"\r\n"
                + "日本,https://jp.example,ユーザー,秘密,\r\n"
            let utf16: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            let file = try write(utf16, "utf16.csv", in: scratch)
            let imported = try cli(["import", "--format", "chrome", file])
            #expect(
                imported.status == 0 && imported.stdoutText == "added 2, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["get", "formula", "--field", "username"]).stdoutText == "=cmd|' /C calc'!A0")
            #expect(try cli(["get", "formula", "--field", "password"]).stdoutText == "@SUM(A1)")
            #expect(try cli(["get", "formula", "--field", "notes"]).stdoutText == "-2+3\r\nline")
            #expect(try cli(["get", "日本", "--field", "password"]).stdoutText == "秘密")
            #expect(try cli(["get", "日本", "--field", "username"]).stdoutText == "ユーザー")
        }
    }

    /// A CSV file is read a row at a time, twice, and stored a thousand entries at a time where
    /// the store writes item by item (a tree vault), all at once into a vault file: the same keys
    /// (numbered across batches, a title an entry holds passed over), and a bad last row stores
    /// nothing on either.
    @Test(arguments: [CLIBackend.vault, .treeVault])
    func aLongCSVIsStoredABatchAtATime(on backend: CLIBackend) throws {
        let scratch = try ScratchDirectory("csv-long")
        defer { scratch.remove() }
        try backend.run {
            var text = "name,url,username,password,note\n"
            for index in 0..<2_500 {
                let title =
                    [999, 1_000, 2_001].contains(index) ? "same" : index == 1_500 ? "same (2)" : "site \(index)"
                text += "\(title),https://\(index).example,user\(index),pw-\(index),\n"
            }
            let bad = try write(Array((text + "last,https://x.example,u\n").utf8), "bad.csv", in: scratch)
            let refused = try cli(["-s", "long", "import", "--format", "chrome", bad])
            #expect(refused.status == 65 && refused.stderr.contains("line 2502"), "\(refused.stderr)")
            #expect(try cli(["-s", "long", "list"]).stdoutText.isEmpty, "a bad last row stores nothing")

            let file = try write(Array(text.utf8), "long.csv", in: scratch)
            let imported = try cli(["-s", "long", "import", "--format", "chrome", file])
            #expect(imported.stdoutText == "added 2500, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("'same'; the later is stored as 'same (3)'"), "\(imported.stderr)")
            let keys = try cli(["-s", "long", "list"]).stdoutText.split(separator: "\n")
            #expect(keys.count == 2_500 && Set(keys).count == 2_500)
            for (key, password) in [
                ("same", "pw-999"), ("same (3)", "pw-1000"), ("same (2)", "pw-1500"),
                ("same (4)", "pw-2001"), ("site 2499", "pw-2499"), ("site 0", "pw-0"),
            ] {
                #expect(try cli(["-s", "long", "get", key, "--field", "password"]).stdoutText == password, "\(key)")
            }
            let again = try cli(["-s", "long", "import", "--format", "chrome", file, "--dry-run"])
            #expect(
                again.stdoutText.hasSuffix(
                    "would add 0, replace 0, skip 2500 (already there; --overwrite replaces them)\n"))
        }
    }

    /// A file read a piece at a time is still bounded: zeros (a device, a sparse file) are no
    /// export after their first MiB, and a file over 256 MiB is refused before its first row.
    @Test func zerosAndHugeFilesAreRefusedAtOnce() throws {
        let scratch = try ScratchDirectory("csv-huge")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            let zeros = try write([UInt8](repeating: 0, count: 2 << 20), "zeros.csv", in: scratch)
            let huge = try write(Array("name,url,username,password\n".utf8), "huge.csv", in: scratch)
            #expect(truncate(huge, 300 << 20) == 0)
            for (file, message) in [
                (zeros, "only white space or zero bytes"), ("/dev/zero", "zero bytes"),
                (huge, "larger than 256 MiB"),
            ] {
                let refused = try cli(["import", "--format", "chrome", file])
                #expect(refused.status == 65 && refused.stderr.contains(message), "\(file): \(refused.stderr)")
            }
            #expect(try cli(["list"]).stdoutText.isEmpty)
        }
    }

    /// What an outside attack found: a key the tree vault cannot hold (its file name too long)
    /// is refused before the first write, naming the entry (it was found at the write, after the
    /// rows before it were stored, with 64); and standard input is read from where it was left.
    @Test func aKeyTheStoreCannotHoldStoresNothingAndStdinIsReadFromItsPlace() throws {
        let scratch = try ScratchDirectory("csv-tree-long")
        defer { scratch.remove() }
        try CLIBackend.treeVault.run {
            var text = "name,url,username,password\n"
            for index in 0..<1_500 { text += "site \(index),https://\(index).example,u,pw\n" }
            let long = try write(
                Array((text + String(repeating: "T", count: 300) + ",https://x,u,pw\n").utf8), "l.csv", in: scratch)
            let refused = try cli(["-s", "tree", "import", "--format", "chrome", long])
            #expect(refused.status == 65 && refused.stderr.contains("entry 1501,"), "\(refused.stderr)")
            #expect(refused.stderr.contains("nothing was stored"))
            #expect(try cli(["-s", "tree", "list"]).stdoutText.isEmpty)

            let two = try write(
                Array("name,url,username,password\nold,https://o,u,pw\n\(text)".utf8), "two.csv", in: scratch)
            let script = "(read; read; \"$0\" -s tree import --format chrome) < \"$1\""
            let imported = try runProcess(
                "/bin/bash", ["-c", script, keychainCLIPath, two],
                environment: ProcessInfo.processInfo.environment.merging(
                    CLIBackend.overrides.compactMapValues { $0 }
                ) { $1 })
            #expect(imported.stdoutText == "added 1500, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["-s", "tree", "get", "old"]).status == 1)
        }
    }

    /// Dashlane's CSV export is a zip: its credentials and secure notes stored, its cards and IDs
    /// said on standard error.
    @Test func aDashlaneZipSaysWhatItDoesNotKeep() throws {
        let scratch = try ScratchDirectory("csv-dashlane")
        defer { scratch.remove() }
        for (name, text) in [
            (
                "credentials.csv",
                "username,username2,username3,title,password,note,url,category,otpSecret\n"
                    + "ivan,,,mail,pw-dash,,https://mail.example,Email,JBSWY3DPEHPK3PXP\n"
            ),
            ("securenotes.csv", "title,note\ndoor,code 1234\n"),
            (
                "payments.csv",
                "type,account_name,account_holder,cc_number,code\ncredit_card,Visa,I,4111111111111111,123\n"
            ),
            ("ids.csv", "type,number,name\npassport,X1,I\nlicense,L2,I\n"),
        ] {
            _ = try write(Array(text.utf8), name, in: scratch)
        }
        let zip = scratch.url.appendingPathComponent("dashlane.zip").path
        let zipped = try runProcess(
            "/usr/bin/zip",
            ["-q", "-j", zip]
                + ["credentials.csv", "securenotes.csv", "payments.csv", "ids.csv"].map {
                    scratch.url.appendingPathComponent($0).path
                }, environment: ProcessInfo.processInfo.environment, timeout: 60)
        #expect(zipped.status == 0, "\(zipped.stderr)")
        try CLIBackend.withVault { _ in
            let imported = try cli(["import", "--format", "dashlane", zip])
            #expect(
                imported.status == 0 && imported.stdoutText == "added 2, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(imported.stderr.contains("'payments.csv': 1 row of payment cards and bank accounts, not imported"))
            #expect(imported.stderr.contains("'ids.csv': 2 rows of IDs"), "\(imported.stderr)")
            #expect(!imported.stderr.contains("4111111111111111") && !imported.stderr.contains("X1"))
            #expect(try cli(["get", "Email/mail", "--field", "password"]).stdoutText == "pw-dash")
            #expect(try cli(["otp", "Email/mail", "--at", "59"]).stdoutText == "996554\n")
            #expect(try cli(["get", "door", "--field", "notes"]).stdoutText == "code 1234")
        }
    }
}
