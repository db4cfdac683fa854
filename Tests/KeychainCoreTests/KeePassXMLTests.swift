import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainKeePass

/// KeePass 2 XML as keepassxc-cli exports a database, read into entries by libxml2's reader.
@Suite("KeePass XML read into entries")
struct KeePassXMLTests {
    func database(_ body: String, meta: String = "") throws -> KeePassXML.Database {
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <KeePassFile><Meta>\(meta)</Meta><Root><Group><UUID>root</UUID><Name>Passwords</Name>\(body)</Group></Root></KeePassFile>
            """
        return try KeePassXML.database(of: Array(xml.utf8), source: "'db.kdbx'")
    }

    func entry(_ strings: [(String, String)], extra: String = "") -> String {
        "<Entry>" + strings.map { "<String><Key>\($0.0)</Key><Value>\($0.1)</Value></String>" }.joined() + extra
            + "</Entry>"
    }

    @Test func anEntryKeepsEveryStringAndSkipsItsHistory() throws {
        let read = try database(
            entry(
                [("Title", "site"), ("Password", "pw"), ("custom", "c"), ("UserName", "me"), ("otp", "not a seed!")],
                extra: "<Tags>a, b</Tags><History>\(entry([("Title", "old"), ("Password", "old-pw")]))</History>"))
        #expect(read.entries.count == 1)
        let site = try #require(read.entries.first)
        #expect(site.key == "site" && site.password == "pw" && site.totp == nil)
        #expect(
            site.fields == [
                .init("username", "me"), .init("custom", "c"), .init("otp (2)", "not a seed!"), .init("tag", "a"),
                .init("tag (2)", "b"),
            ])
    }

    @Test func groupsMakeThePathAndTheRecycleBinIsLeftOut() throws {
        let read = try database(
            "<Group><UUID>g</UUID><Name>Web</Name><Group><UUID>h</UUID><Name>Mail</Name>"
                + entry([("Title", ""), ("Password", "p")]) + "</Group></Group>"
                + "<Group><UUID>bin</UUID><Name>Recycle Bin</Name>" + entry([("Title", "gone"), ("Password", "x")])
                + "<Group><UUID>sub</UUID><Name>Inside</Name>" + entry([("Title", "gone too")]) + "</Group></Group>",
            meta: "<RecycleBinUUID>bin</RecycleBinUUID>")
        #expect(read.entries.map(\.key) == ["Web/Mail/(no title)"])
    }

    @Test func theOlderTOTPSeedIsTheTOTPOnlyWithTheUsualSettings() throws {
        let usual = try database(entry([("Title", "a"), ("TOTP Seed", "JBSWY3DPEHPK3PXP"), ("TOTP Settings", "30;6")]))
        #expect(usual.entries.first?.totp == "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP")
        #expect(usual.entries.first?.fields == [])
        let eight = try database(entry([("Title", "a"), ("TOTP Seed", "JBSWY3DPEHPK3PXP"), ("TOTP Settings", "30;8")]))
        #expect(eight.entries.first?.totp == nil)
        #expect(
            eight.entries.first?.fields == [.init("TOTP Seed", "JBSWY3DPEHPK3PXP"), .init("TOTP Settings", "30;8")])
    }

    /// KeeOTP's settings in `otp` become an otpauth:// URI with the same period, digits and hash;
    /// a Steam code, which `otp` does not compute, stays a field.
    @Test func keeOTPSettingsAreTheTOTPAndASteamCodeIsAField() throws {
        let kee = try database(
            entry([("Title", "k"), ("otp", "key=JBSWY3DPEHPK3PXP&amp;step=60&amp;size=8&amp;otpHashMode=SHA256")]))
        #expect(
            kee.entries.first?.totp
                == "otpauth://totp/k?secret=JBSWY3DPEHPK3PXP&period=60&digits=8&algorithm=SHA256")
        let steam =
            "otpauth://totp/s:u?secret=JBSWY3DPEHPK3PXP&amp;period=30&amp;digits=5&amp;issuer=s&amp;encoder=steam"
        let read = try database(entry([("Title", "s"), ("otp", steam)]))
        #expect(read.entries.first?.totp == nil)
        #expect(read.entries.first?.fields.map(\.name) == ["otp (2)"])
        let unknown = try database(entry([("Title", "u"), ("otp", "key=JBSWY3DPEHPK3PXP&amp;counter=3")]))
        #expect(unknown.entries.first?.totp == nil)
    }

    @Test func attachmentsAreReportedByName() throws {
        let read = try database(entry([("Title", "k")], extra: "<Binary><Key>id_rsa</Key><Value Ref=\"0\"/></Binary>"))
        #expect(read.attachments.map(\.entry) == ["k"] && read.attachments.map(\.name) == ["id_rsa"])
    }

    /// What is not KeePass XML is refused with a message that quotes no value.
    @Test func whatIsNotKeePassXMLIsRefused() throws {
        func refusal(_ xml: String) -> String? {
            do {
                _ = try KeePassXML.database(of: Array(xml.utf8), source: "'db.kdbx'")
                return nil
            } catch {
                return "\(error)"
            }
        }
        let cut = refusal("<KeePassFile><Root><Group><Entry><String><Key>Password</Key><Value>hunter2</Val")
        #expect(cut?.contains("not well-formed XML (line 1)") == true && cut?.contains("hunter2") == false)
        #expect(refusal("<html/>")?.contains("its root element is 'html'") == true)
        #expect(refusal("<KeePassFile><Meta/></KeePassFile>")?.contains("no Root element") == true)
        #expect(refusal("")?.contains("not well-formed") == true)
        // A document type (entities that expand a billion times) is refused before any expansion.
        let laughs = """
            <?xml version="1.0"?><!DOCTYPE KeePassFile [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>
            <KeePassFile><Root><Group><Entry><String><Key>Title</Key><Value>&b;</Value></String></Entry></Group></Root></KeePassFile>
            """
        #expect(refusal(laughs)?.contains("declares a document type") == true)
        let external = """
            <?xml version="1.0"?><!DOCTYPE KeePassFile SYSTEM "http://example.com/x.dtd"><KeePassFile><Root/></KeePassFile>
            """
        #expect(refusal(external)?.contains("declares a document type") == true)
        #expect(
            refusal(
                "<KeePassFile><Root><Group><Entry><String><Value>v</Value></String></Entry></Group></Root></KeePassFile>"
            )?
            .contains("a String without a Key") == true)
    }
}
