import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Proton Pass's data.json (alone and in its zip) and 1Password's .1pif, from their documented
/// layouts (Proton's and Bitwarden's readers, pass-import's test export; made-up values).
@Suite("Proton Pass and 1Password .1pif exports")
struct ProtonPass1PIFExportTests {
    static let proton = #"""
        {"version": "1.17.0", "userId": "u", "encrypted": false, "vaults": {
          "share1": {"name": "Personal", "description": "", "display": {"color": 0, "icon": 0}, "items": [
            {"itemId": "i1", "shareId": "share1", "state": 1, "aliasEmail": null, "contentFormatVersion": 1,
             "createTime": 1, "modifyTime": 2, "pinned": false,
             "data": {"metadata": {"name": "Mail", "note": "my note", "itemUuid": "x"},
                      "extraFields": [{"fieldName": "PIN", "type": "hidden", "data": {"content": "4321"}},
                                      {"fieldName": "2nd code", "type": "totp", "data": {"totpUri": "otpauth://totp/x?secret=GEZDGNBV"}}],
                      "type": "login",
                      "content": {"itemEmail": "me@proton.me", "password": "pw", "urls": ["https://mail.example", "https://m.example"],
                                  "totpUri": "otpauth://totp/Mail?secret=JBSWY3DPEHPK3PXP", "passkeys": [{"keyId": "k"}],
                                  "itemUsername": "me"}}},
            {"itemId": "i2", "state": 1, "aliasEmail": "alias@passmail.net",
             "data": {"metadata": {"name": "Alias", "note": "", "itemUuid": "y"}, "extraFields": [], "type": "alias", "content": {}}},
            {"itemId": "i3", "state": 1, "aliasEmail": null,
             "data": {"metadata": {"name": "Visa", "note": "", "itemUuid": "z"}, "extraFields": [], "type": "creditCard",
                      "content": {"cardholderName": "A B", "cardType": 0, "number": "4111", "verificationNumber": "123",
                                  "expirationDate": "2030-01", "pin": "9999"}}},
            {"itemId": "i4", "state": 1, "aliasEmail": null,
             "data": {"metadata": {"name": "Me", "note": "", "itemUuid": "w"}, "extraFields": [], "type": "identity",
                      "content": {"fullName": "A B", "email": "a@b.example",
                                  "extraPersonalDetails": [{"fieldName": "Nickname", "type": "text", "data": {"content": "Al"}}],
                                  "extraSections": [{"sectionName": "More", "sectionFields": [
                                      {"fieldName": "Shoe", "type": "text", "data": {"content": "42"}}]}]}}},
            {"itemId": "i5", "state": 2, "aliasEmail": null,
             "data": {"metadata": {"name": "Old", "note": "", "itemUuid": "v"}, "extraFields": [], "type": "note", "content": {}}}
          ]},
          "share2": {"name": "Work", "items": [
            {"itemId": "i6", "state": 1, "aliasEmail": null,
             "data": {"metadata": {"name": "Note", "note": "text", "itemUuid": "u"}, "extraFields": [], "type": "note", "content": {}}}
          ]}}}
        """#

    func expectProton(_ read: ManagerExport) {
        #expect(
            read.entries.map(\.key) == ["Personal/Mail", "Personal/Alias", "Personal/Visa", "Personal/Me", "Work/Note"])
        guard read.entries.count == 5 else { return }
        let mail = read.entries[0]
        #expect(
            mail.password == "pw" && mail.notes == "my note"
                && mail.totp == "otpauth://totp/Mail?secret=JBSWY3DPEHPK3PXP")
        #expect(
            mail.fields == [
                .init("username", "me"), .init("url", "https://mail.example"), .init("url (2)", "https://m.example"),
                .init("email", "me@proton.me"), .init("PIN", "4321"),
                .init("2nd code", "otpauth://totp/x?secret=GEZDGNBV"),
            ])
        #expect(read.entries[1].fields == [.init("username", "alias@passmail.net")])
        #expect(
            read.entries[2].fields == [
                .init("cardholderName", "A B"), .init("cardType", "0"), .init("number", "4111"),
                .init("verificationNumber", "123"), .init("expirationDate", "2030-01"), .init("pin", "9999"),
            ])
        #expect(
            read.entries[3].fields == [
                .init("fullName", "A B"), .init("email", "a@b.example"), .init("Nickname", "Al"), .init("Shoe", "42"),
            ])
        #expect(read.entries[4].notes == "text" && read.entries[4].fields == [])
        #expect(read.notImported.contains { $0.contains("'Mail'") && $0.contains("1 passkey") })
        #expect(read.notImported.contains { $0.contains("'Old'") && $0.contains("trash") })
        for entry in read.entries { expectReadsBack(entry) }
    }

    @Test func protonPassDataJSONAloneAndInItsZip() throws {
        let alone = try readJSONExport(.protonpass, Self.proton)
        expectProton(alone)
        #expect(alone.notImported.count == 2)
        let zip = ManagerInput(
            bytes: [],
            zipMembers: [("Proton Pass/data.json", Array(Self.proton.utf8)), ("Proton Pass/files/scan.pdf", [1, 2])],
            source: "'pass.zip'")
        let zipped = try JSONExport.read(.protonpass, zip)
        expectProton(zipped)
        #expect(zipped.notImported.count == 3)
        #expect(zipped.notImported.first?.contains("'Proton Pass/files/scan.pdf'") == true)
    }

    @Test func anEncryptedOrForeignProtonExportIsRefused() throws {
        let pgp = ManagerInput(bytes: [], zipMembers: [("Proton Pass/data.pgp", [1])], source: "'pass.zip'")
        let encrypted = try #require(throws: FormatError.self) { try JSONExport.read(.protonpass, pgp) }
        #expect(encrypted.description.contains("is an encrypted Proton Pass export"))
        let flagged = try #require(throws: FormatError.self) {
            try readJSONExport(.protonpass, #"{"encrypted": true, "vaults": {}}"#)
        }
        #expect(flagged.description.contains("is an encrypted Proton Pass export"))
        let other = ManagerInput(bytes: [], zipMembers: [("export.data", [1])], source: "'x.zip'")
        let foreign = try #require(throws: FormatError.self) { try JSONExport.read(.protonpass, other) }
        #expect(foreign.description.contains("is a zip without Proton Pass/data.json"))
        let noVaults = try #require(throws: FormatError.self) { try readJSONExport(.protonpass, #"{"items": []}"#) }
        #expect(noVaults.description.contains("is not a Proton Pass export (it has no object of vaults)"))
    }

    static let separator = "***5642bee8-a5ff-11dc-8314-0800200c9a66***"
    static let onePIF = [
        #"{"uuid":"F1","typeName":"system.folder.Regular","title":"Web","folderUuid":"","trashed":false,"secureContents":{}}"#,
        #"{"uuid":"A1","typeName":"webforms.WebForm","title":"Forum","location":"https://forum.example","folderUuid":"F1","trashed":false,"openContents":{"tags":["social"]},"secureContents":{"htmlForm":{"htmlMethod":"post"},"fields":[{"designation":"username","name":"user","type":"T","value":"bob","id":"u"},{"designation":"password","name":"pass","type":"P","value":"hunter2","id":"p"},{"name":"remember","type":"C","value":"✓","id":"r"},{"name":"go","type":"I","value":"","id":"g"}],"URLs":[{"label":"website","url":"https://forum.example"},{"label":"alt","url":"https://forum2.example"}],"sections":[{"name":"s","title":"More","fields":[{"k":"concealed","n":"TOTP_1","t":"one-time","v":"otpauth://totp/Forum?secret=JBSWY3DPEHPK3PXP"},{"k":"string","n":"q","t":"question","v":"pet"},{"k":"date","n":"d","t":"since","v":1483228800}]}],"notesPlain":"hello\nworld","passwordHistory":[{"value":"old1","time":1},{"value":"old2","time":2}]}}"#,
        #"{"uuid":"N1","typeName":"securenotes.SecureNote","title":"Note","folderUuid":"","trashed":false,"secureContents":{"notesPlain":"just text"}}"#,
        #"{"uuid":"P1","typeName":"passwords.Password","title":"Router","trashed":false,"secureContents":{"password":"wifi-pw"}}"#,
        #"{"uuid":"T1","typeName":"webforms.WebForm","title":"Binned","trashed":true,"secureContents":{"fields":[]}}"#,
        #"{"uuid":"D1","typeName":"system.Tombstone","title":"Deleted"}"#,
        #"{"uuid":"X1","typeName":"wallet.financial.CreditCard","title":"Card","secureContents":{"cardholder":"A B","ccnum":"4111","cvv":"123","sections":[]}}"#,
        #"{"uuid":"S1","typeName":"system.Document","title":"Scan","secureContents":{"documentAttributes":{"fileName":"scan.pdf","documentId":"d"}}}"#,
    ].map { $0 + "\n" + separator + "\n" }.joined()

    @Test func aOnePIFKeepsEveryFieldAndLeavesTheTrashOut() throws {
        for text in [Self.onePIF, "\u{FEFF}" + Self.onePIF.replacingOccurrences(of: "\n", with: "\r\n")] {
            let read = try readJSONExport(.onePasswordInterchange, text)
            #expect(read.entries.map(\.key) == ["Web/Forum", "Note", "Router", "Card", "Scan"])
            let forum = read.entries[0]
            #expect(forum.password == "hunter2" && forum.notes == "hello\nworld")
            #expect(forum.totp == "otpauth://totp/Forum?secret=JBSWY3DPEHPK3PXP")
            #expect(
                forum.fields == [
                    .init("username", "bob"), .init("url", "https://forum.example"),
                    .init("url (2)", "https://forum2.example"), .init("remember", "✓"), .init("question", "pet"),
                    .init("since", "1483228800"), .init("tag", "social"), .init("previous password", "old1"),
                    .init("previous password (2)", "old2"),
                ])
            #expect(read.entries[1].notes == "just text" && read.entries[2].password == "wifi-pw")
            #expect(
                read.entries[3].fields == [.init("cardholder", "A B"), .init("ccnum", "4111"), .init("cvv", "123")])
            #expect(read.notImported.count == 2)
            #expect(read.notImported[0].contains("'Binned'") && read.notImported[0].contains("trash"))
            #expect(read.notImported[1].contains("'scan.pdf'") && read.notImported[1].contains(".1pux"))
            for entry in read.entries { expectReadsBack(entry) }
        }
    }

    @Test func whatIsNoOnePIFIsRefusedNamingTheLine() throws {
        for text in ["{}", "[1]", #"{"title": "x"}"#, "{\"typeName\": \"webforms.WebForm\"}\n\(Self.separator)\n{}"] {
            let error = try #require(throws: FormatError.self) { try readJSONExport(.onePasswordInterchange, text) }
            #expect(error.description.contains("not a 1Password export"), "\(error)")
        }
        let broken =
            "{\"typeName\": \"a\"}\n\(Self.separator)\n{\"typeName\": \"b\",\n \"title\": }\n\(Self.separator)\n"
        let error = try #require(throws: FormatError.self) { try readJSONExport(.onePasswordInterchange, broken) }
        #expect(error.description.contains("is not valid JSON (line 4: a value is expected)"), "\(error)")
    }
}
