import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Reads `text` as a JSON export of `kind`.
func readJSONExport(_ kind: JSONExport.Kind, _ text: String) throws -> ManagerExport {
    try JSONExport.read(kind, ManagerInput(bytes: Array(text.utf8), source: "'export.json'"))
}

/// Every field, the password, the TOTP and the notes of `entry` read back from its text.
func expectReadsBack(_ entry: PasswordEntry, sourceLocation: SourceLocation = #_sourceLocation) {
    let text = entry.text
    for field in entry.fields {
        #expect(EntryFields.value(of: field.name, in: text) == field.value, sourceLocation: sourceLocation)
    }
    #expect(EntryFields.value(of: "password", in: text) == entry.password, sourceLocation: sourceLocation)
    #expect(EntryFields.value(of: "otp", in: text) == entry.totp, sourceLocation: sourceLocation)
    #expect((EntryFields.value(of: "notes", in: text) ?? "") == entry.notes, sourceLocation: sourceLocation)
}

/// Dashlane's JSON (its lists of items by kind) and Enpass 6's JSON, from their documented
/// layouts (pass-import's test exports' structure, made-up values).
@Suite("Dashlane and Enpass JSON exports")
struct DashlaneEnpassExportTests {
    static let dashlane = #"""
        {
          "AUTHENTIFIANT": [
            {"domain": "https://shop.example", "email": "me@example.com", "login": "alice", "note": "line 1\nline 2",
             "password": "p@ss:w0rd", "secondaryLogin": "alt", "title": "Shop", "otpSecret": "JBSWY3DPEHPK3PXP",
             "category": "Shopping", "autoLogin": true, "strength": 80},
            {"domain": "", "email": "", "login": "", "note": "", "password": "", "secondaryLogin": "",
             "title": "empty entry"}
          ],
          "SECURENOTE": [{"title": "Wifi", "content": "the code is 1234", "category": "Home"}],
          "PAYMENTMEANS_CREDITCARD": [{"bank": "Bank", "cardNumber": "4111111111111111", "name": "Visa",
                                       "owner": "A B", "expireMonth": "01", "expireYear": "2030", "securityCode": "123"}],
          "EMAIL": [{"email": "x@example.com", "emailName": "work"}, {"email": "", "emailName": ""}]
        }
        """#

    @Test func dashlaneKeepsEveryMemberOfEveryKind() throws {
        let read = try readJSONExport(.dashlane, Self.dashlane)
        #expect(read.notImported.isEmpty && read.files.isEmpty)
        #expect(
            read.entries.map(\.key) == [
                "Shop", "empty entry", "Secure notes/Wifi", "Payment cards/Visa", "Emails/work", "Emails/EMAIL 2",
            ])
        let shop = read.entries[0]
        #expect(shop.password == "p@ss:w0rd" && shop.notes == "line 1\nline 2")
        #expect(shop.totp == "otpauth://totp/Shop?secret=JBSWY3DPEHPK3PXP")
        #expect(
            shop.fields == [
                .init("username", "alice"), .init("url", "https://shop.example"), .init("email", "me@example.com"),
                .init("secondaryLogin", "alt"), .init("category", "Shopping"), .init("autoLogin", "true"),
                .init("strength", "80"),
            ])
        #expect(read.entries[1].password == "" && read.entries[1].fields == [] && read.entries[1].notes == "")
        #expect(
            read.entries[2].notes == "the code is 1234"
                && read.entries[2].fields == [.init("title", "Wifi"), .init("category", "Home")])
        #expect(
            read.entries[3].fields == [
                .init("bank", "Bank"), .init("cardNumber", "4111111111111111"), .init("name", "Visa"),
                .init("owner", "A B"),
                .init("expireMonth", "01"), .init("expireYear", "2030"), .init("securityCode", "123"),
            ])
        #expect(read.entries[4].fields == [.init("email", "x@example.com"), .init("emailName", "work")])
        #expect(read.entries[5].fields == [])
        for entry in read.entries { expectReadsBack(entry) }
    }

    @Test func whatIsNoDashlaneExportIsRefused() throws {
        for text in ["{}", #"{"items": []}"#, #"{"AUTHENTIFIANT": {}}"#, "[]", "3"] {
            let error = try #require(throws: FormatError.self) { try readJSONExport(.dashlane, text) }
            #expect(error.description.hasPrefix("'export.json' is not a Dashlane JSON export"), "\(error)")
        }
        let error = try #require(throws: FormatError.self) { try readJSONExport(.dashlane, #"{"items": []}"#) }
        #expect(error.description.contains("is not a Dashlane JSON export"))
        let item = try #require(throws: FormatError.self) {
            try readJSONExport(.dashlane, #"{"AUTHENTIFIANT": ["p@ss"]}"#)
        }
        #expect(item.description == "'export.json': AUTHENTIFIANT item 1 is not an object; nothing was stored")
    }

    static let enpass = #"""
        {"folders": [{"icon": "1008", "parent_uuid": "", "title": "Work", "updated_at": 1, "uuid": "f1"},
                     {"icon": "1008", "parent_uuid": "f1", "title": "Servers", "updated_at": 1, "uuid": "f2"}],
         "items": [
          {"archived": 0, "auto_submit": 1, "category": "login", "createdAt": 1, "favorite": 0,
           "fields": [
             {"deleted": 0, "label": "Username", "order": 1, "sensitive": 0, "type": "username", "uid": 10, "value": "alice"},
             {"deleted": 0, "label": "E-mail", "order": 2, "sensitive": 0, "type": "email", "uid": 12, "value": "a@example.com"},
             {"deleted": 0, "label": "Password", "order": 3, "sensitive": 1, "type": "password", "uid": 11, "value": "s3cret"},
             {"deleted": 0, "label": "Website", "order": 4, "sensitive": 0, "type": "url", "uid": 13, "value": "https://a.example"},
             {"deleted": 0, "label": "ADDITIONAL DETAILS", "order": 5, "sensitive": 0, "type": "section", "uid": 101, "value": ""},
             {"deleted": 0, "label": "One-time code", "order": 6, "sensitive": 0, "type": "totp", "uid": 102, "value": "JBSWY3DPEHPK3PXP"},
             {"deleted": 1, "label": "Old PIN", "order": 7, "sensitive": 0, "type": "pin", "uid": 103, "value": "0000"},
             {"deleted": 0, "label": "Security answer", "order": 8, "sensitive": 1, "type": "text", "uid": 16, "value": "blue\nsky"},
             {"deleted": 0, "label": "Website", "order": 9, "sensitive": 0, "type": "url", "uid": 17, "value": "https://b.example"},
             {"deleted": 0, "label": "", "order": 10, "sensitive": 0, "type": "phone", "uid": 18, "value": "+1 555"}
           ],
           "folders": ["f2", "f1"], "icon": {"fav": "a.example", "image": {"file": "misc/login"}, "type": 1, "uuid": ""},
           "note": "n1", "subtitle": "alice", "template_type": "login.default", "title": "Server A", "trashed": 0,
           "updated_at": 1, "uuid": "i1",
           "attachments": [{"data": "aGVsbG8=", "kind": "text/plain", "name": "hello.txt", "order": 1, "size": 5, "uuid": "a1"},
                           {"data": "d29ybGQ=", "kind": "text/plain", "name": "hello.txt", "order": 2, "size": 5, "uuid": "a2"},
                           {"kind": "image/png", "name": "big.png", "size": 999999, "uuid": "a3"}]},
          {"archived": 1, "category": "creditcard", "favorite": 1, "template_type": "creditcard.default",
           "fields": [{"deleted": 0, "label": "Cardholder", "type": "ccName", "value": "A B"},
                      {"deleted": 0, "label": "Number", "type": "ccNumber", "value": "4111"}],
           "folders": [], "note": "", "title": "Card", "trashed": 0, "uuid": "i2"},
          {"title": "Gone", "trashed": 1, "fields": [{"type": "password", "value": "old"}], "note": "", "uuid": "i3"}
         ]}
        """#

    @Test func enpassKeepsFieldsFoldersAndAttachmentsAndSaysWhatItLeavesOut() throws {
        let read = try readJSONExport(.enpass, Self.enpass)
        #expect(read.entries.map(\.key) == ["Work/Servers/Server A", "Card"])
        let server = read.entries[0]
        #expect(server.password == "s3cret" && server.notes == "n1")
        #expect(server.totp == OTPSeed.uri("JBSWY3DPEHPK3PXP", label: "Server A"))
        #expect(
            server.fields == [
                .init("username", "alice"), .init("url", "https://a.example"), .init("url (2)", "https://b.example"),
                .init("E-mail", "a@example.com"), .init("Security answer", "blue\nsky"), .init("phone", "+1 555"),
                .init("folder", "Work"),
            ])
        #expect(
            read.entries[1].fields == [.init("Cardholder", "A B"), .init("Number", "4111"), .init("state", "archived")])
        #expect(read.entries[1].password == "")
        #expect(
            read.files == [
                ManagerFile(entry: "Work/Servers/Server A", name: "hello.txt", bytes: Array("hello".utf8)),
                ManagerFile(entry: "Work/Servers/Server A", name: "hello.txt (2)", bytes: Array("world".utf8)),
            ])
        #expect(read.notImported.count == 2)
        #expect(read.notImported[0].contains("'big.png'") && read.notImported[0].contains("does not hold"))
        #expect(read.notImported[1].contains("'Gone'") && read.notImported[1].contains("trash"))
        for entry in read.entries { expectReadsBack(entry) }
    }

    @Test func enpassRefusesWhatIsNoEnpassExport() throws {
        let none = try #require(throws: FormatError.self) { try readJSONExport(.enpass, "{}") }
        #expect(none.description.contains("is not an Enpass JSON export (it has no list of items)"))
        // Bitwarden's JSON has a list of items too.
        let bitwarden =
            #"{"encrypted": false, "items": [{"id": "1", "type": 1, "name": "n", "login": {"password": "p"}}]}"#
        let foreign = try #require(throws: FormatError.self) { try readJSONExport(.enpass, bitwarden) }
        #expect(foreign.description.contains("is not an Enpass JSON export: its item 1 has no title"))
        let bad = try #require(throws: FormatError.self) {
            try readJSONExport(.enpass, #"{"items": [{"title": "t", "attachments": [{"name": "x", "data": "%%%"}]}]}"#)
        }
        #expect(bad.description.contains("item 1: the attachment 'x' is not valid base64"))
    }
}
