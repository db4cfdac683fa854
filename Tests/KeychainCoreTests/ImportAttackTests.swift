import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainKeePass
@testable import KeychainManagers

/// What an outside attack on the import formats found (issue 64), each a fact that failed before.
@Suite("import: what the attack found")
struct ImportAttackTests {
    /// A QR code's `OTPAUTH://TOTP/` is a TOTP: the scheme and type are written in lower case, so
    /// `otp` and `--field otp` find the line.
    @Test func anUpperCaseOTPAuthURIIsTheTOTP() {
        let uri = OTPSeed.uri("OTPAUTH://TOTP/Site:me?secret=JBSWY3DPEHPK3PXP&issuer=Site", label: "x")
        #expect(uri == "otpauth://totp/Site:me?secret=JBSWY3DPEHPK3PXP&issuer=Site")
        var entry = PasswordEntry(path: ["t"], password: "p")
        entry.setTOTP("OTPAUTH://TOTP/Site:me?secret=JBSWY3DPEHPK3PXP", label: "t")
        #expect(EntryFields.value(of: "otp", in: entry.text) == "otpauth://totp/Site:me?secret=JBSWY3DPEHPK3PXP")
    }

    /// A login of an IPv6 address is named by the whole address, not cut at its first colon.
    @Test func anIPv6HostIsTheWholeAddress() {
        #expect(CSVLayout.host("http://[::1]:8080/login") == "[::1]")
        #expect(CSVLayout.host("https://[fe80::2]/") == "[fe80::2]")
        #expect(CSVLayout.host("https://user@example.com:8443/x") == "example.com")
    }

    /// A Dashlane item titled by a member keeps that member as a field: the key cannot hold a `/`.
    @Test func aDashlaneIdentityKeepsTheMemberThatTitlesIt() throws {
        let json = #"{"IDENTITY": [{"firstName": "Jo/hn", "lastName": "Doe"}]}"#
        let read = try JSONExport.read(.dashlane, ManagerInput(bytes: Array(json.utf8), source: "d.json"))
        let entry = try #require(read.entries.first)
        #expect(EntryFields.value(of: "firstName", in: entry.text) == "Jo/hn")
        #expect(EntryFields.value(of: "lastName", in: entry.text) == "Doe")
    }

    /// A 1Password item in another state than active (trashed) says so, as an archived one does.
    @Test func aTrashedOnePasswordItemKeepsItsState() throws {
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "V"}, "items": [
              {"state": "trashed", "overview": {"title": "old"}, "details": {"password": "p"}}]}]}]}
            """#
        let entries = try OnePasswordExport.entries(ofData: data, source: "f.1pux")
        #expect(entries.first?.fields == [.init("state", "trashed")])
    }

    /// The recycle bin's entries are left out with a line saying so, never silently.
    @Test func theRecycleBinIsNamedAsLeftOut() throws {
        let xml = """
            <KeePassFile><Meta><RecycleBinUUID>bin</RecycleBinUUID></Meta><Root><Group><UUID>r</UUID><Name>R</Name>
            <Group><UUID>bin</UUID><Name>Recycle Bin</Name>
            <Entry><String><Key>Title</Key><Value>a</Value></String></Entry>
            <Entry><String><Key>Title</Key><Value>b</Value></String></Entry></Group>
            <Entry><String><Key>Title</Key><Value>kept</Value></String></Entry></Group></Root></KeePassFile>
            """
        let read = try KeePassXML.export(of: Array(xml.utf8), source: "db")
        #expect(read.entries.map(\.key) == ["kept"])
        #expect(read.notImported == ["the recycle bin's 2 entries are left out (deleted)"])
    }

    /// FreeOTP's own backup (a Java serialization) is named for what it is, not sent to iconv.
    @Test func freeOTPsOwnBackupIsNamed() {
        let input = ManagerInput(bytes: [0xAC, 0xED, 0x00, 0x05, 0x73, 0x72], source: "'tokens.xml'")
        #expect {
            try OTPExport.read(.freeotp, input)
        } throws: { error in
            "\(error)".contains("FreeOTP's own backup") && !"\(error)".contains("iconv")
        }
    }

    /// The keys of a manager's entries, decided before the first write (a CSV's first reading):
    /// an empty title is `untitled`, a repeat is numbered past the numbers other entries hold,
    /// names are told apart by their bytes, and a name the store refuses stops it, naming the entry.
    @Test func entriesKeysAreNumberedByBytesBeforeAnyWrite() throws {
        let names = ["", "untitled", "a", "a", "a (2)", "e\u{301}", "\u{E9}", "a"]
        let (keys, renamed) = try ImportFile.keys(of: names) { "entry \($0 + 1)" }
        #expect(
            keys.map(\.rawValue) == ["untitled", "untitled (2)", "a", "a (3)", "a (2)", "e\u{301}", "\u{E9}", "a (4)"])
        #expect(keys[5].rawValue.utf8.count == 3 && keys[6].rawValue.utf8.count == 2)
        #expect(renamed.map(\.storedAs) == ["untitled (2)", "a (3)", "a (4)"])
        let error = try #require(throws: FormatError.self) {
            try ImportFile.keys(of: ["ok", "a\u{0}b"]) { "entry \($0 + 1)" }
        }
        #expect(error.description.hasPrefix("entry 2: invalid key"), "\(error)")
        #expect(error.description.contains("nothing was stored. Rename it where it comes from"), "\(error)")
    }
}
