import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Helpers of the CSV managers' tests: a sample read, an entry checked field by field and read
/// back from its text.
enum CSVSample {
    static func read(_ kind: CSVExport.Kind, _ text: String, zip: [(String, String)]? = nil) throws -> ManagerExport {
        try CSVExport.read(
            kind,
            ManagerInput(
                bytes: zip == nil ? Array(text.utf8) : [], zipMembers: zip?.map { ($0.0, Array($0.1.utf8)) },
                source: "'export.csv'"))
    }

    static func failure(_ kind: CSVExport.Kind, _ text: String) -> String {
        do {
            _ = try read(kind, text)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    /// A CSV line of `values` under `header`, every cell quoted, the others empty.
    static func line(_ header: String, _ values: [String: String]) -> String {
        header.split(separator: ",").map { name in
            "\"" + (values[String(name)] ?? "").replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }.joined(separator: ",")
    }

    /// Checks `entry` is exactly this, and that each part reads back from its text.
    static func check(
        _ entry: PasswordEntry, key: String, password: String, fields: [(String, String)], totp: String? = nil,
        notes: String = "", sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(entry.key == key, sourceLocation: sourceLocation)
        #expect(entry.password == password, sourceLocation: sourceLocation)
        #expect(entry.fields == fields.map { .init($0.0, $0.1) }, sourceLocation: sourceLocation)
        #expect(entry.notes == notes, sourceLocation: sourceLocation)
        if let totp {
            #expect(entry.totp?.hasPrefix("otpauth://totp/") == true, sourceLocation: sourceLocation)
            #expect(
                entry.totp?.contains("secret=\(totp)") == true, "\(entry.totp ?? "")", sourceLocation: sourceLocation)
        } else {
            #expect(entry.totp == nil, sourceLocation: sourceLocation)
        }
        let text = entry.text
        #expect(EntryFields.value(of: "password", in: text) == password, sourceLocation: sourceLocation)
        for field in entry.fields {
            #expect(EntryFields.value(of: field.name, in: text) == field.value, sourceLocation: sourceLocation)
        }
        #expect(EntryFields.value(of: "otp", in: text) == entry.totp, sourceLocation: sourceLocation)
        #expect((EntryFields.value(of: "notes", in: text) ?? "") == notes, sourceLocation: sourceLocation)
    }
}

/// Chrome, Firefox, Safari, 1Password and KeePass CSV exports, samples built from what each
/// writes (pass-import's test exports, the managers' own pages), read into entries.
@Suite("Browsers', 1Password's and KeePass's CSV read into entries")
struct CSVBrowserExportTests {
    @Test func chromeEdgeBraveOperaVivaldi() throws {
        let export = try CSVSample.read(
            .chrome,
            """
            name,url,username,password,note
            example.com,https://example.com/login,alice,"pa,ss""word",
            ,https://nameless.example/,bob,hunter2,"line one
            line two"
            formula,https://f.example,=cmd|' /C calc'!A0,@SUM(A1),-2+3
            """)
        #expect(export.entries.count == 3 && export.notImported.isEmpty)
        CSVSample.check(
            export.entries[0], key: "example.com", password: "pa,ss\"word",
            fields: [("username", "alice"), ("url", "https://example.com/login")])
        CSVSample.check(
            export.entries[1], key: "nameless.example", password: "hunter2",
            fields: [("username", "bob"), ("url", "https://nameless.example/")], notes: "line one\nline two")
        CSVSample.check(
            export.entries[2], key: "formula", password: "@SUM(A1)",
            fields: [("username", "=cmd|' /C calc'!A0"), ("url", "https://f.example")], notes: "-2+3")
        // Before Chrome 118: no note column. Lines of empty cells (a spreadsheet's) hold nothing.
        let old = try CSVSample.read(.chrome, "name,url,username,password\r\nx,https://x.example,u,p\r\n,,,\r\n,\r\n")
        #expect(old.entries.count == 1)
        CSVSample.check(
            old.entries[0], key: "x", password: "p", fields: [("username", "u"), ("url", "https://x.example")])
    }

    @Test func firefox() throws {
        let export = try CSVSample.read(
            .firefox,
            """
            "url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"
            "https://accounts.example.org","carol","s3cret",,"https://accounts.example.org","{0a1b}","1700000000000","1700000001000","1700000002000"
            "ftp://files.example.net:21","","ftp-pass","FTP realm","","{0a1c}","1","2","3"
            """)
        CSVSample.check(
            export.entries[0], key: "accounts.example.org", password: "s3cret",
            fields: [
                ("username", "carol"), ("url", "https://accounts.example.org"),
                ("formActionOrigin", "https://accounts.example.org"), ("guid", "{0a1b}"),
                ("timeCreated", "1700000000000"),
                ("timeLastUsed", "1700000001000"), ("timePasswordChanged", "1700000002000"),
            ])
        CSVSample.check(
            export.entries[1], key: "files.example.net", password: "ftp-pass",
            fields: [
                ("url", "ftp://files.example.net:21"), ("httpRealm", "FTP realm"), ("guid", "{0a1c}"),
                ("timeCreated", "1"),
                ("timeLastUsed", "2"), ("timePasswordChanged", "3"),
            ])
    }

    @Test func safariAndApplePasswords() throws {
        let export = try CSVSample.read(
            .safari,
            """
            \u{FEFF}Title,URL,Username,Password,Notes,OTPAuth
            shop.example (dana),https://shop.example/,dana,Pw-1,"note, with comma",otpauth://totp/shop.example:dana?secret=JBSWY3DPEHPK3PXP&issuer=shop.example
            wifi,,,hunter 2,,
            """)
        CSVSample.check(
            export.entries[0], key: "shop.example (dana)", password: "Pw-1",
            fields: [("username", "dana"), ("url", "https://shop.example/")], totp: "JBSWY3DPEHPK3PXP",
            notes: "note, with comma")
        CSVSample.check(export.entries[1], key: "wifi", password: "hunter 2", fields: [])
    }

    @Test func onePassword8And7And4() throws {
        let eight = try CSVSample.read(
            .onePassword,
            """
            Title,Url,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes
            bank,https://bank.example,hank,pw,otpauth://totp/bank:hank?secret=JBSWY3DPEHPK3PXP,true,false,"finance,important",sort code 12-34-56
            old,,,pw2,,false,true,,
            """)
        CSVSample.check(
            eight.entries[0], key: "bank", password: "pw",
            fields: [
                ("username", "hank"), ("url", "https://bank.example"), ("Favorite", "true"),
                ("Tags", "finance,important"),
            ],
            totp: "JBSWY3DPEHPK3PXP", notes: "sort code 12-34-56")
        CSVSample.check(eight.entries[1], key: "old", password: "pw2", fields: [("Archived", "true")])
        let seven = try CSVSample.read(
            .onePassword,
            """
            "Title","Username","Password","URL","Notes","Type","section:abc","uuid"
            "router","admin","pw7","http://192.168.1.1","","Login","","u7"
            """)
        CSVSample.check(
            seven.entries[0], key: "router", password: "pw7",
            fields: [("username", "admin"), ("url", "http://192.168.1.1"), ("Type", "Login"), ("uuid", "u7")])
        let four = try CSVSample.read(
            .onePassword, "title,notes,username,password,url\nmail,n,ian,pw4,https://m.example\n")
        CSVSample.check(
            four.entries[0], key: "mail", password: "pw4", fields: [("username", "ian"), ("url", "https://m.example")],
            notes: "n")
    }

    @Test func keePass2AndKeePassXC() throws {
        let two = try CSVSample.read(
            .keepass,
            """
            "Account","Login Name","Password","Web Site","Comments"
            "mail","jo","pw","https://mail.example","two
            lines"
            """)
        CSVSample.check(
            two.entries[0], key: "mail", password: "pw", fields: [("username", "jo"), ("url", "https://mail.example")],
            notes: "two\nlines")
        let xc = try CSVSample.read(
            .keepass,
            """
            "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
            "Root/Work/Servers","nas","admin","pw","https://nas.example","n","otpauth://totp/nas?secret=JBSWY3DPEHPK3PXP","0","2024-05-01T10:00:00Z","2023-01-01T10:00:00Z"
            "Root","top","","pw2","","","","12","",""
            """)
        CSVSample.check(
            xc.entries[0], key: "Work/Servers/nas", password: "pw",
            fields: [
                ("username", "admin"), ("url", "https://nas.example"), ("Last Modified", "2024-05-01T10:00:00Z"),
                ("Created", "2023-01-01T10:00:00Z"),
            ], totp: "JBSWY3DPEHPK3PXP", notes: "n")
        CSVSample.check(xc.entries[1], key: "top", password: "pw2", fields: [])
    }

    @Test func aFileOfAnotherManagerIsSaidToBeOne() {
        let bitwarden =
            "folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp\n"
        let message = CSVSample.failure(.chrome, bitwarden)
        #expect(
            message
                == "'export.csv' is not a Chrome CSV export: its first line has the columns of a Bitwarden CSV export "
                + "(login_password); nothing was stored. Import it with --format bitwarden")
        // LastPass's columns include Chrome's four: its own say whose it is, either way.
        let lastPass = "url,username,password,totp,extra,name,grouping,fav\nhttps://a.example,u,p,,,a,,0\n"
        #expect(CSVSample.failure(.chrome, lastPass).contains("the columns of a LastPass CSV export (grouping,extra)"))
        #expect(CSVSample.failure(.firefox, lastPass).contains("Import it with --format lastpass"))
        #expect(CSVSample.failure(.lastpass, bitwarden).contains("Import it with --format bitwarden"))
        let keePass = "\"Account\",\"Login Name\",\"Password\",\"Web Site\",\"Comments\"\n"
        let wrongKeePass = CSVSample.failure(.onePassword, keePass)
        #expect(wrongKeePass.contains("a KeePass CSV export (account,login name)"), "\(wrongKeePass)")
        let nameless = CSVSample.failure(.bitwarden, "title,password\n")
        #expect(
            nameless
                == "'export.csv' is not a Bitwarden CSV export: its first line has no type,name,login_uri,"
                + "login_username,login_password columns; nothing was stored. It looks like a 1Password CSV export: "
                + "import it with --format 1password")
        let none = CSVSample.failure(.safari, "a,b\n1,2\n")
        #expect(none.contains("is not a Safari CSV export: its first line has no title,url,username,password columns"))
        #expect(none.contains("Export it again from Safari"))
        #expect(CSVSample.failure(.keepass, "x\n").contains("is not a KeePass CSV export"))
        #expect(CSVSample.failure(.onePassword, "").contains("has no line of CSV"))
    }

    @Test func aRowOfAnotherLengthIsRefusedNamingItsLine() {
        let message = CSVSample.failure(
            .chrome, "name,url,username,password,note\na,b,c,d,e\n\"x\ny\",b,c,secret-value\n")
        #expect(
            message
                == "'export.csv': line 3 has 4 cells where the first line has 5 columns; nothing was stored. "
                + "Is a quote or a comma missing?")
        #expect(CSVSample.failure(.firefox, "url,username,password\na,b,c,d\n").contains("line 2 has 4 cells"))
    }
}
