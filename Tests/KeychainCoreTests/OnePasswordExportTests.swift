import Foundation
import Testing

@testable import KeychainFormats

/// 1Password's 1PUX export.data, as support.1password.com/1pux-format describes it (and as
/// KeePassXC's sample file has it), read into entries.
@Suite("1Password's 1PUX export read into entries")
struct OnePasswordExportTests {
    static let data = #"""
        {"accounts": [{"attrs": {"accountName": "Me", "name": "Me", "uuid": "A"},
          "vaults": [{"attrs": {"uuid": "V", "name": "Private", "type": "P"}, "items": [
            {"uuid": "1", "favIndex": 1, "createdAt": 1, "updatedAt": 2, "state": "active", "categoryUuid": "001",
             "details": {
               "loginFields": [
                 {"value": "octocat", "id": "", "name": "username", "fieldType": "T", "designation": "username"},
                 {"value": "gh-pw", "id": "", "name": "password", "fieldType": "P", "designation": "password"},
                 {"value": "on", "id": "remember", "name": "remember", "fieldType": "C"}],
               "notesPlain": "my notes\nline 2",
               "sections": [
                 {"title": "", "name": "add more", "fields": [
                   {"title": "one-time password", "id": "TOTP_x", "value": {"totp": "JBSWY3DPEHPK3PXP"}},
                   {"title": "PIN", "id": "p", "value": {"concealed": "1234"}},
                   {"title": "backup email", "id": "e", "value": {"email": {"email_address": "a@b.c", "provider": null}}},
                   {"title": "", "id": "addr", "value": {"address": {"street": "1 Rd", "city": "X"}}},
                   {"title": "expires", "id": "m", "value": {"monthYear": 202612}}]}],
               "passwordHistory": [{"value": "newer-pw", "time": 9}, {"value": "old-pw", "time": 5}]},
             "overview": {"title": "GitHub", "url": "https://github.com/login",
                          "urls": [{"label": "", "url": "https://github.com/login"}, {"label": "", "url": "https://gist.github.com"}],
                          "tags": ["dev", "work"]}},
            {"item": {"uuid": "2", "state": "archived", "categoryUuid": "005",
                      "details": {"password": "just-a-password"}, "overview": {"title": "Router"}}}
          ]}]}]}
        """#

    @Test func everyFieldIsKept() throws {
        let entries = try OnePasswordExport.entries(ofData: Self.data, source: "export.1pux")
        #expect(entries.map(\.key) == ["Private/GitHub", "Private/Router"])
        let github = entries[0]
        #expect(github.password == "gh-pw")
        #expect(
            github.fields == [
                .init("username", "octocat"), .init("url", "https://github.com/login"),
                .init("url (2)", "https://gist.github.com"),
                .init("remember", "on"), .init("PIN", "1234"), .init("backup email", "a@b.c"),
                .init("addr", #"{"street":"1 Rd","city":"X"}"#), .init("expires", "202612"), .init("tag", "dev"),
                .init("tag (2)", "work"), .init("previous password", "old-pw"),
                .init("previous password (2)", "newer-pw"),
            ])
        #expect(github.totp == "otpauth://totp/GitHub?secret=JBSWY3DPEHPK3PXP")
        #expect(github.notes == "my notes\nline 2")
        #expect(entries[1].password == "just-a-password", "a Password item, in the older wrapped shape")
        #expect(entries[1].fields == [.init("state", "archived")])
    }

    @Test(arguments: [
        (#"{"vaults": []}"#, "no list of accounts"),
        (#"[1]"#, "not a JSON object"),
        (#"{"accounts": [{"vaults": [{"items": [7]}]}"#, "not valid JSON"),
        (
            #"{"accounts": [{"vaults": [{"attrs": {"name": "V"}, "items": [7]}]}]}"#,
            "vault 'V', item 1 is not an object"
        ),
        (#"{"accounts": [], "accounts": []}"#, "f.1pux: export.data, line 1: an object has the field 'accounts' twice"),
        (
            "{\"accounts\": [{\"vaults\": [{\"items\": [{},\n{\"overview\": {\"title\": \"a\", \"title\": \"b\"}}]}]}]}",
            "f.1pux: export.data, line 2: account 1, vault 1, item 2 has the field 'title' twice"
        ),
        (
            #"{"accounts": [{"vaults": [{"items": [{"details": {"loginFields": [{"value": 1,}]}}]}]}]}"#,
            "line 1: account 1, vault 1, item 1 has a comma right before a closing bracket"
        ),
    ])
    func aFileThatIsNoExportIsRefused(text: String, message: String) {
        #expect {
            try OnePasswordExport.entries(ofData: text, source: "f.1pux")
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// A Document's file and a file field's: named in the entry, listed with their zip members.
    @Test func filesAreListedWithTheirMembers() throws {
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "V"}, "items": [
              {"overview": {"title": "doc"}, "details": {"documentAttributes": {"fileName": "a.pdf", "documentId": "x"}}},
              {"overview": {"title": "key"}, "details": {"sections": [{"fields": [
                {"title": "ssh", "value": {"file": {"fileName": "id", "documentId": "y"}}}]}]}}]}]}]}
            """#
        let export = try OnePasswordExport.export(ofData: data, source: "f")
        #expect(export.entries.map(\.fields) == [[.init("file", "a.pdf")], [.init("ssh", "id")]])
        #expect(
            export.files == [
                .init(entry: "V/doc", name: "a.pdf", member: "files/x__a.pdf"),
                .init(entry: "V/key", name: "id", member: "files/y__id"),
            ])
        let unnamed = data.replacingOccurrences(of: #""fileName": "id", "#, with: "")
        #expect(throws: FormatError.self) { try OnePasswordExport.export(ofData: unnamed, source: "f") }
        let climbing = data.replacingOccurrences(of: #""fileName": "id""#, with: #""fileName": "../id""#)
        #expect(throws: FormatError.self) { try OnePasswordExport.export(ofData: climbing, source: "f") }
    }

    /// Numbers as 1Password wrote them (a double would make 1.10 1.1 and round past 2^53), and an
    /// object's members in the file's order: read exactly, never refused.
    @Test func numbersAndMembersAreReadAsWritten() throws {
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "V"}, "items": [{"overview": {"title": "t"}, "details": {
              "loginFields": [{"value": 1.10, "designation": "password"}, {"value": 9007199254740993, "name": "big"}],
              "sections": [{"fields": [
                {"title": "a", "value": {"address": {"zip": 12345678901234567890, "street": "1 Rd", "city": "X"}}},
                {"title": "n", "value": {"string": 1e400}}]}]}}]}]}]}
            """#
        let entry = try #require(try OnePasswordExport.entries(ofData: data, source: "f").first)
        #expect(entry.password == "1.10")
        #expect(
            entry.fields == [
                .init("big", "9007199254740993"),
                .init("a", #"{"zip":12345678901234567890,"street":"1 Rd","city":"X"}"#), .init("n", "1e400"),
            ])
    }
}
