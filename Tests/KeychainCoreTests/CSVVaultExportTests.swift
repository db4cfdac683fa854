import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// LastPass, Keeper, NordPass, Bitwarden, Dashlane, Enpass and Proton Pass CSV exports, samples
/// built from what each writes (pass-import's test exports, Bitwarden's importers, the managers'
/// own pages), read into entries.
@Suite("Password managers' CSV read into entries")
struct CSVVaultExportTests {
    @Test func lastPassLoginsNotesAndNotesOfAKind() throws {
        let export = try CSVSample.read(
            .lastpass,
            #"""
            url,username,password,totp,extra,name,grouping,fav
            https://mail.example.com,erin,"p@ss""1",JBSWY3DPEHPK3PXP,"recovery codes
            in the safe",mail,Work\Email,1
            http://sn,,,,just a plain note,plain note,Personal,0
            http://sn,,,,"NoteType:Server
            Language:en-US
            Hostname:db.internal
            Username:root
            Password:toor
            Notes:first line
            second: line",db server,Work,0
            http://,frank,pw,,,no url,,0
            """#)
        CSVSample.check(
            export.entries[0], key: "Work/Email/mail", password: "p@ss\"1",
            fields: [("username", "erin"), ("url", "https://mail.example.com"), ("fav", "1")], totp: "JBSWY3DPEHPK3PXP",
            notes: "recovery codes\nin the safe")
        CSVSample.check(
            export.entries[1], key: "Personal/plain note", password: "", fields: [], notes: "just a plain note")
        CSVSample.check(
            export.entries[2], key: "Work/db server", password: "toor",
            fields: [("NoteType", "Server"), ("Language", "en-US"), ("Hostname", "db.internal"), ("Username", "root")],
            notes: "first line\nsecond: line")
        CSVSample.check(export.entries[3], key: "no url", password: "pw", fields: [("username", "frank")])
    }

    @Test func keeperWithoutHeaderAndWithCustomFields() throws {
        let export = try CSVSample.read(
            .keeper,
            #"""
            "Work\Servers","db","admin","pw1","https://db.example","notes here","","TFC:Keeper","otpauth://totp/Keeper:admin?secret=JBSWY3DPEHPK3PXP","Security Question","first pet?"
            "","shared one","u","p2","","","Team\Shared"
            "Personal","bare","","","","",""
            "Personal","old","x","y","https://old.example","multi
            line"
            "Work","in both","v","p3","","","Team","","=1+1"
            """#)
        CSVSample.check(
            export.entries[0], key: "Work/Servers/db", password: "pw1",
            fields: [("username", "admin"), ("url", "https://db.example"), ("Security Question", "first pet?")],
            totp: "JBSWY3DPEHPK3PXP", notes: "notes here")
        CSVSample.check(export.entries[1], key: "Team/Shared/shared one", password: "p2", fields: [("username", "u")])
        CSVSample.check(export.entries[2], key: "Personal/bare", password: "", fields: [])
        CSVSample.check(
            export.entries[3], key: "Personal/old", password: "y",
            fields: [("username", "x"), ("url", "https://old.example")], notes: "multi\nline")
        CSVSample.check(
            export.entries[4], key: "Work/in both", password: "p3",
            fields: [("username", "v"), ("shared folder", "Team"), ("custom field", "=1+1")])
        #expect(CSVSample.failure(.keeper, "a,b,c,d,e\n").contains("line 1 has 5 cells, so it is no line of a Keeper"))
        #expect(try CSVSample.read(.keeper, ",,,,,,\n,\n").entries.isEmpty, "lines of empty cells hold nothing")
        #expect(CSVSample.failure(.keeper, "a,b,c,d,e,f,g\na,b,c,d,e,f,g,h\n").contains("line 2 has 8 cells"))
        #expect(
            CSVSample.failure(.keeper, "name,url,username,password,note\n")
                .contains("is not a Keeper CSV export: Keeper's has no line of column names"))
    }

    @Test func nordPassFoldersCardsAndURLs() throws {
        let header =
            "name,url,additional_urls,username,password,note,cardholdername,cardnumber,cvc,pin,expirydate,zipcode,folder,"
            + "full_name,phone_number,email,address1,address2,city,country,state,type,custom_fields"
        let lines = [
            header, CSVSample.line(header, ["name": "Work", "type": "folder"]),
            CSVSample.line(
                header,
                [
                    "name": "vpn", "url": "https://vpn.example", "additional_urls": #"["https://vpn2.example"]"#,
                    "username": "gina", "password": "pw", "note": "a note", "folder": "Work/Remote", "type": "password",
                ]),
            CSVSample.line(
                header,
                [
                    "name": "visa", "cardholdername": "Gina G", "cardnumber": "4111111111111111", "cvc": "123",
                    "pin": "9999", "expirydate": "12/30", "zipcode": "12345", "type": "credit_card",
                ]),
        ]
        let export = try CSVSample.read(.nordpass, lines.joined(separator: "\n"))
        #expect(export.entries.count == 2, "the folder's own row is no entry")
        CSVSample.check(
            export.entries[0], key: "Work/Remote/vpn", password: "pw",
            fields: [("username", "gina"), ("url", "https://vpn.example"), ("url (2)", "https://vpn2.example")],
            notes: "a note")
        CSVSample.check(
            export.entries[1], key: "visa", password: "",
            fields: [
                ("cardholdername", "Gina G"), ("cardnumber", "4111111111111111"), ("cvc", "123"), ("pin", "9999"),
                ("expirydate", "12/30"), ("zipcode", "12345"), ("type", "credit_card"),
            ])
        // An older export: no type column, a folder a row with its name alone.
        let old = try CSVSample.read(
            .nordpass, "name,url,username,password,note,folder\nEmails,,,,,\nmail,,u,p,,Emails\n")
        #expect(old.entries.map(\.key) == ["Emails/mail"])
    }

    @Test func bitwardenPersonalAndOrganisation() throws {
        let export = try CSVSample.read(
            .bitwarden,
            """
            folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp
            Work/Servers,1,login,db,"rotated
            in May","region: eu-west-1
            pin: 4321
            flag:",0,"https://db.example,ssh://db",admin,"pa:ss""word",JBSWY3DPEHPK3PXP
            ,,note,wifi,the code is 1234,,,,,,
            """)
        CSVSample.check(
            export.entries[0], key: "Work/Servers/db", password: "pa:ss\"word",
            fields: [
                ("username", "admin"), ("url", "https://db.example"), ("url (2)", "ssh://db"), ("favorite", "1"),
                ("region", "eu-west-1"), ("pin", "4321"),
            ], totp: "JBSWY3DPEHPK3PXP", notes: "rotated\nin May")
        CSVSample.check(export.entries[1], key: "wifi", password: "", fields: [], notes: "the code is 1234")
        let organisation = try CSVSample.read(
            .bitwarden,
            """
            collections,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp
            "Team/Infra,Other",login,x,,,1,https://x.example,u,p,
            """)
        CSVSample.check(
            organisation.entries[0], key: "Team/Infra/x", password: "p",
            fields: [("username", "u"), ("url", "https://x.example"), ("reprompt", "1")])
    }

    @Test func dashlaneZipAndItsFilesAlone() throws {
        let credentials = """
            username,username2,username3,title,password,note,url,category,otpSecret
            ivan,ivan@alt.example,,mail,pw,a note,https://mail.example,Email,JBSWY3DPEHPK3PXP
            """
        let notes = "title,note\ndoor,\"code\n1234\"\n"
        let payments = "type,account_name,account_holder,cc_number,code\ncredit_card,Visa,I,4111,123\nbank,B,I,,\n"
        let export = try CSVSample.read(
            .dashlane, "",
            zip: [
                ("credentials.csv", credentials), ("securenotes.csv", notes), ("payments.csv", payments),
                ("ids.csv", "type,number\n"), ("readme.txt", "x"),
            ])
        CSVSample.check(
            export.entries[0], key: "Email/mail", password: "pw",
            fields: [("username", "ivan"), ("url", "https://mail.example"), ("username2", "ivan@alt.example")],
            totp: "JBSWY3DPEHPK3PXP", notes: "a note")
        CSVSample.check(export.entries[1], key: "door", password: "", fields: [], notes: "code\n1234")
        #expect(
            export.notImported == [
                "'export.csv', 'payments.csv': 2 rows of payment cards and bank accounts, not imported (only logins "
                    + "and secure notes are)",
                "'export.csv', 'readme.txt': not imported (a file that is no CSV)",
            ])
        let alone = try CSVSample.read(.dashlane, credentials.replacingOccurrences(of: "otpSecret", with: "otpUrl"))
        #expect(alone.entries.map(\.key) == ["Email/mail"] && alone.entries[0].totp != nil)
        #expect(try CSVSample.read(.dashlane, notes).entries.map(\.key) == ["door"])
        #expect(CSVSample.failure(.dashlane, "a,b\n").contains("is not a Dashlane CSV export"))
        let empty = (try? CSVSample.read(.dashlane, "", zip: [("payments.csv", payments)])).map { _ in "read" }
        #expect(empty == nil, "a zip without credentials or notes is no Dashlane export")
    }

    @Test func enpassTitleThenPairsThenNote() throws {
        let export = try CSVSample.read(
            .enpass,
            """
            "Title","Field","Value","Field","Value",.........,"Note"
            "mail","Username","judy","E-mail","judy@mail.example","*Password","pw","URL","https://mail.example","TOTP","JBSWY3DPEHPK3PXP","a note"
            "wifi","*Password","wpa-key"
            "plain note","just text"
            """)
        CSVSample.check(
            export.entries[0], key: "mail", password: "pw",
            fields: [("username", "judy"), ("url", "https://mail.example"), ("E-mail", "judy@mail.example")],
            totp: "JBSWY3DPEHPK3PXP", notes: "a note")
        CSVSample.check(export.entries[1], key: "wifi", password: "wpa-key", fields: [])
        CSVSample.check(export.entries[2], key: "plain note", password: "", fields: [], notes: "just text")
        #expect(CSVSample.failure(.enpass, "url,username,password\n").contains("is not an Enpass CSV export"))
    }

    @Test func protonPass() throws {
        let export = try CSVSample.read(
            .protonpass,
            """
            type,name,url,email,username,password,note,totp,createTime,modifyTime,vault
            login,GitHub,"https://github.com, https://gist.github.com",kim@proton.example,kim,pw,a note,JBSWY3DPEHPK3PXP,1700000000,1700000001,Personal
            note,Recovery,,,,,codes here,,1700000000,1700000000,Personal
            creditCard,Amex,,,,,"{""number"":""3782""}",,1,2,Work
            """)
        CSVSample.check(
            export.entries[0], key: "Personal/GitHub", password: "pw",
            fields: [
                ("username", "kim"), ("url", "https://github.com"), ("url (2)", "https://gist.github.com"),
                ("email", "kim@proton.example"), ("createTime", "1700000000"), ("modifyTime", "1700000001"),
            ], totp: "JBSWY3DPEHPK3PXP", notes: "a note")
        CSVSample.check(
            export.entries[1], key: "Personal/Recovery", password: "",
            fields: [("createTime", "1700000000"), ("modifyTime", "1700000000")], notes: "codes here")
        CSVSample.check(
            export.entries[2], key: "Work/Amex", password: "",
            fields: [("type", "creditCard"), ("createTime", "1"), ("modifyTime", "2")], notes: #"{"number":"3782"}"#)
        // Newer: every URL and its autofill mode as JSON besides the default mode's.
        let newer = try CSVSample.read(
            .protonpass,
            #"""
            type,name,url,autofillUrls,email,username,password,note,totp,createTime,modifyTime,vault
            login,Git,https://git.example,"[{""url"":""https://git.example"",""mode"":0},{""url"":""https://sso.example"",""mode"":6}]",,u,p,,,1,2,Work
            """#)
        CSVSample.check(
            newer.entries[0], key: "Work/Git", password: "p",
            fields: [
                ("username", "u"), ("url", "https://git.example"), ("url (2)", "https://sso.example"),
                ("createTime", "1"), ("modifyTime", "2"),
            ])
    }
}
