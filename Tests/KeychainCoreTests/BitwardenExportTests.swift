import Foundation
import Testing

@testable import KeychainFormats

/// Bitwarden's unencrypted JSON export, as its "Export vault data" page and bitwarden/clients'
/// export models describe it, read into entries.
@Suite("Bitwarden's JSON export read into entries")
struct BitwardenExportTests {
    /// One item of every kind Bitwarden exports, and one of a kind this version does not know.
    static let export = #"""
        {
          "encrypted": false,
          "folders": [{"id": "f1", "name": "Work/Servers"}, {"id": "f2", "name": "Personal"}],
          "items": [
            {"id": "i1", "organizationId": null, "folderId": "f1", "type": 1, "reprompt": 0, "name": "db",
             "notes": "rotated in May\nask ops", "favorite": true,
             "fields": [
               {"name": "region", "value": "eu-west-1", "type": 0},
               {"name": "Password", "value": "not the password", "type": 1},
               {"name": "pin", "value": "4321", "type": 1},
               {"name": "mfa", "value": "true", "type": 2},
               {"name": "user again", "value": null, "type": 3, "linkedId": 100},
               {"name": "multi", "value": "a\nb", "type": 0}
             ],
             "login": {"uris": [{"match": null, "uri": "https://db.example.com"}, {"match": 3, "uri": "ssh://db"}],
                       "username": "admin", "password": "pa:ss\"word", "totp": "JBSW Y3DP EHPK 3PXP"},
             "passwordHistory": [{"lastUsedDate": "2024-03-01T00:00:00.000Z", "password": "old2"},
                                 {"lastUsedDate": "2024-01-01T00:00:00.000Z", "password": "old1"}],
             "revisionDate": "2024-05-01T00:00:00.000Z", "creationDate": "2023-01-01T00:00:00.000Z",
             "deletedDate": null, "collectionIds": null},
            {"id": "i2", "folderId": null, "type": 2, "name": "wifi", "notes": "the code is 1234",
             "secureNote": {"type": 0}, "favorite": false},
            {"id": "i3", "folderId": "f2", "type": 3, "name": "visa", "notes": null,
             "card": {"cardholderName": "A B", "brand": "Visa", "number": "4111111111111111", "expMonth": "1",
                      "expYear": "2030", "code": "123"}},
            {"id": "i4", "folderId": "f2", "type": 5, "name": "key", "notes": null,
             "sshKey": {"privateKey": "-----BEGIN KEY-----\nabc\n-----END KEY-----", "publicKey": "ssh-ed25519 AAA",
                        "keyFingerprint": "SHA256:xyz"}},
            {"id": "i5", "folderId": null, "type": 8, "name": "passport", "notes": null,
             "passport": {"number": "X1", "country": "FR", "issued": 2020, "renewable": false}},
            {"id": "i6", "folderId": null, "type": 1, "name": "steam", "login": {"username": "u", "password": "p",
             "totp": "steam://ABCDEF"}},
            {"id": "i7", "folderId": null, "type": 1, "name": "uri-totp", "login": {"password": "p",
             "totp": "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=8"}}
          ]
        }
        """#

    @Test func everyKindOfItemKeepsEveryField() throws {
        let entries = try BitwardenExport.entries(of: Self.export, source: "export.json")
        #expect(
            entries.map(\.key) == [
                "Work/Servers/db", "wifi", "Personal/visa", "Personal/key", "passport", "steam", "uri-totp",
            ])
        let db = entries[0]
        #expect(db.password == "pa:ss\"word")
        #expect(
            db.fields == [
                .init("username", "admin"), .init("url", "https://db.example.com"), .init("url (2)", "ssh://db"),
                .init("region", "eu-west-1"), .init("Password (2)", "not the password"), .init("pin", "4321"),
                .init("mfa", "true"),
                .init("user again", "(linked to username)"), .init("multi", "a\nb"), .init("previous password", "old1"),
                .init("previous password (2)", "old2"),
            ])
        #expect(db.totp == "otpauth://totp/db?secret=JBSWY3DPEHPK3PXP")
        #expect(db.notes == "rotated in May\nask ops")
        #expect(EntryFields.value(of: "password", in: db.text) == "pa:ss\"word")
        #expect(EntryFields.value(of: "multi", in: db.text) == "a\nb")
        #expect(EntryFields.value(of: "password (2)", in: db.text) == "not the password")
        #expect(EntryFields.value(of: "url (2)", in: db.text) == "ssh://db")
        #expect(EntryFields.value(of: "notes", in: db.text) == "rotated in May\nask ops")

        #expect(entries[1].text == "\n\nthe code is 1234", "a secure note: no password, no field")
        #expect(
            entries[2].fields.map(\.name) == ["cardholderName", "brand", "number", "expMonth", "expYear", "code"])
        #expect(
            EntryFields.value(of: "privateKey", in: entries[3].text) == "-----BEGIN KEY-----\nabc\n-----END KEY-----")
        #expect(
            entries[4].fields == [
                .init("country", "FR"), .init("issued", "2020"), .init("number", "X1"), .init("renewable", "false"),
            ],
            "an unknown kind: its members")
        // A TOTP that is no seed otp computes is kept under otp, as the source had it.
        #expect(entries[5].totp == "steam://ABCDEF" && !entries[5].fields.contains { $0.name == "totp" })
        #expect(EntryFields.value(of: "otp", in: entries[5].text) == "steam://ABCDEF")
        #expect(entries[6].totp == "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=8")
    }

    @Test func anOrganisationsExportUsesTheFirstCollection() throws {
        let text = #"""
            {"encrypted": false, "collections": [{"id": "c1", "name": "Ops"}],
             "items": [{"type": 1, "name": "x", "collectionIds": ["c1", "c2"], "login": {"password": "p"}}]}
            """#
        #expect(try BitwardenExport.entries(of: text, source: "s").map(\.key) == ["Ops/x"])
    }

    @Test(arguments: [
        (
            #"{"encrypted": true, "passwordProtected": true, "salt": "x", "data": "2.a|b|c"}"#,
            "encrypted Bitwarden export"
        ),
        (#"{"encrypted": true, "folders": [], "items": [{"name": "2.a|b|c"}]}"#, "encrypted Bitwarden export"),
        (#"{"folders": []}"#, "has no list of items"),
        (#"[1, 2]"#, "not a JSON object"),
        (#"{"items": [{"type": 1, "name": "x", "#, "not valid JSON"),
        (#"{"items": [3]}"#, "item 1 is not an object"),
        (#"{"items": [{"type": 1, "name": "x", "fields": [7]}]}"#, "item 1: custom field 1 is not an object"),
        (#"{"items": [{"type": 1, "name": "x", "name": "y"}]}"#, "item 1 has the field 'name' twice"),
        (#"{"items": [{"type": 1, "name": "x",}]}"#, "comma right before a closing bracket"),
        (
            #"{"items": [{"type": 1, "name": "x", "login": {"password": {"a": 1}}}]}"#,
            "the field 'login.password' should be text"
        ),
        (
            "{\"items\": [{\"type\": 1},\n{\"type\": 1, \"name\": \"x\", \"name\": \"y\"}]}",
            "f.json, line 2: item 2 has the field 'name' twice, and tools differ on which one counts; nothing was stored"
        ),
        (#"{"items": [{"type": 1, "name": ["x"]}]}"#, "the field 'name' should be text"),
        (#"{"items": [{"name": "x"}]}"#, "item 1 has no whole number 'type'"),
        (#"{"format": "keychain-cli-export", "version": 1, "items": []}"#, "keychain-cli's own export"),
        (#"{"items": [{"type": 1, "name": "x", "fields": "s"}]}"#, "the field 'fields' should be a list"),
        (#"{"items": [{"type": 1, "name": "x", "login": "s"}]}"#, "the field 'login' should be an object"),
        (
            #"{"items": [{"type": 1, "name": "x", "login": {"uris": ["u"]}}]}"#,
            "the field 'login.uris' should be an object"
        ),
        (#"{"items": [{"type": "1", "name": "x"}]}"#, "item 1 has no whole number 'type'"),
        (#"{"items": [{"type": 1.5, "name": "x"}]}"#, "item 1 has no whole number 'type'"),
        (#"{"encrypted": "true", "items": []}"#, "'encrypted' should be true or false"),
        (" \n", "is empty"),
    ])
    func aFileThatIsNoUnencryptedExportIsRefused(text: String, message: String) {
        #expect {
            try BitwardenExport.entries(of: text, source: "f.json")
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func aBareSeedBecomesAnOtpauthURIAndAnythingElseIsNot() {
        #expect(OTPSeed.uri(" jbsw-y3dp=", label: "a b/ü") == "otpauth://totp/a%20b%2F%C3%BC?secret=JBSWY3DP")
        #expect(OTPSeed.uri("otpauth://totp/x?secret=A", label: "y") == "otpauth://totp/x?secret=A")
        #expect(OTPSeed.uri("steam://ABC", label: "y") == nil)
        #expect(OTPSeed.uri("not base32!", label: "y") == nil)
        #expect(OTPSeed.uri("   ", label: "y") == nil)
    }

    /// A number where Bitwarden writes text is its digits as written: past 2^53 and with a
    /// fraction's zeros, never rounded through a double (which this once refused).
    @Test func aNumberIsReadAsWritten() throws {
        let text =
            #"{"items": [{"type": 1, "name": "x", "login": {"password": 12345678901234567890123, "username": 1.10}}]}"#
        let entry = try #require(try BitwardenExport.entries(of: text, source: "s").first)
        #expect(entry.password == "12345678901234567890123")
        #expect(entry.fields == [.init("username", "1.10")])
    }
}
