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

    /// Every string is kept; of the history, the passwords, oldest first; a TOTP that is no seed
    /// is kept under otp as it is.
    @Test func anEntryKeepsEveryStringAndTheOlderPasswords() throws {
        let versions = [("one", "old-1"), ("two", "old-1"), ("three", "old-2"), ("four", "pw")]
        let history = versions.map { entry([("Title", $0.0), ("Password", $0.1), ("custom", "old")]) }.joined()
        let read = try database(
            entry(
                [("Title", "site"), ("Password", "pw"), ("custom", "c"), ("UserName", "me"), ("otp", "not a seed!")],
                extra: "<Tags>a, b</Tags><History>\(history)</History>"))
        #expect(read.entries.count == 1)
        let site = try #require(read.entries.first)
        #expect(site.key == "site" && site.password == "pw" && site.totp == "not a seed!")
        #expect(
            site.fields == [
                .init("username", "me"), .init("custom", "c"), .init("tag", "a"), .init("tag (2)", "b"),
                .init("previous password", "old-1"), .init("previous password (2)", "old-2"),
            ])
        #expect(EntryFields.value(of: "otp", in: site.text) == "not a seed!")
        #expect(EntryFields.value(of: "previous password (2)", in: site.text) == "old-2")
    }

    /// KeePass 2.47's own TOTP strings (`TimeOtp-*`) are the entry's otp, in each encoding of the
    /// secret; settings otp does not compute leave them as fields.
    @Test(arguments: [
        ("Secret-Base32", "JBSWY3DPEHPK3PXP"), ("Secret-Hex", "48656c6c6f21deadbeef"),
        ("Secret-Base64", "SGVsbG8h3q2+7w=="), ("Secret-UTF8", "Hello!\u{DE}"),
    ])
    func keePassTimeOTPIsTheTOTP(encoding: String, secret: String) throws {
        let read = try database(
            entry([
                ("Title", "t"), ("TimeOtp-\(encoding)", secret), ("TimeOtp-Length", "8"), ("TimeOtp-Period", "60"),
                ("TimeOtp-Algorithm", "HMAC-SHA-256"), ("kept", "k"),
            ]))
        let first = try #require(read.entries.first)
        // python3: base64.b32encode(bytes.fromhex("48656c6c6f21deadbeef")), of "Hello!Þ".encode()
        let seed = encoding == "Secret-UTF8" ? "JBSWY3DPEHBZ4" : "JBSWY3DPEHPK3PXP"
        #expect(first.totp == "otpauth://totp/t?secret=\(seed)&digits=8&period=60&algorithm=SHA256")
        #expect(first.fields == [.init("kept", "k")])
        let odd = try database(entry([("Title", "t"), ("TimeOtp-Secret-Base32", "JBSWY3DP"), ("TimeOtp-Length", "5")]))
        #expect(odd.entries.first?.totp == nil)
        #expect(odd.entries.first?.fields.map(\.name) == ["TimeOtp-Secret-Base32", "TimeOtp-Length"])
    }

    /// A KDBX 3.1 export holds its attachments' bytes in Meta's binaries, gzip or not: each is a
    /// file of its entry; one without bytes, or whose bytes are damaged, is named as not imported.
    @Test func kdbx31AttachmentsAreFiles() throws {
        let gzip = "H4sIAAAAAAAAA2NgTMrMSyyq/A8AKN9jOAkAAAA="  // python3 gzip.compress(b"\x00\x01binary\xff")
        let read = try database(
            entry(
                [("Title", "t")],
                extra: "<Binary><Key>a.bin</Key><Value Ref=\"0\"/></Binary><Binary><Key>a.bin</Key><Value Ref=\"1\"/>"
                    + "</Binary><Binary><Key>gone</Key><Value Ref=\"7\"/></Binary>"
                    + "<Binary><Key>bad</Key><Value Ref=\"2\"/></Binary>"),
            meta: "<Binaries><Binary ID=\"0\" Compressed=\"True\">\(gzip)</Binary><Binary ID=\"1\">AAFi</Binary>"
                + "<Binary ID=\"2\" Compressed=\"True\">AAFi</Binary></Binaries>")
        #expect(
            read.files == [
                ManagerFile(entry: "t", name: "a.bin", bytes: [0, 1] + Array("binary".utf8) + [0xFF]),
                ManagerFile(entry: "t", name: "a.bin (2)", bytes: [0, 1, 0x62]),
            ])
        #expect(read.attachments.map(\.name) == ["gone", "bad"])
        #expect(read.attachmentReasons.first?.contains("not in the export") == true)
        #expect(read.attachmentReasons.last?.contains("damaged") == true)
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
        let eight = try database(entry([("Title", "a"), ("TOTP Seed", "JBSWY3DPEHPK3PXP"), ("TOTP Settings", "60;8")]))
        #expect(eight.entries.first?.totp == "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&period=60&digits=8")
        #expect(eight.entries.first?.fields == [])
        let steam = try database(entry([("Title", "a"), ("TOTP Seed", "JBSWY3DPEHPK3PXP"), ("TOTP Settings", "30;S")]))
        #expect(steam.entries.first?.totp == nil)
        #expect(
            steam.entries.first?.fields == [.init("TOTP Seed", "JBSWY3DPEHPK3PXP"), .init("TOTP Settings", "30;S")])
    }

    /// KeeOTP's settings in `otp` become an otpauth:// URI with the same period, digits and hash;
    /// a Steam code, which `otp` does not compute, is kept under otp as it is.
    @Test func keeOTPSettingsAreTheTOTPAndASteamCodeIsAField() throws {
        let kee = try database(
            entry([("Title", "k"), ("otp", "key=JBSWY3DPEHPK3PXP&amp;step=60&amp;size=8&amp;otpHashMode=SHA256")]))
        #expect(
            kee.entries.first?.totp
                == "otpauth://totp/k?secret=JBSWY3DPEHPK3PXP&period=60&digits=8&algorithm=SHA256")
        let steam =
            "otpauth://totp/s:u?secret=JBSWY3DPEHPK3PXP&amp;period=30&amp;digits=5&amp;issuer=s&amp;encoder=steam"
        let read = try database(entry([("Title", "s"), ("otp", steam)]))
        #expect(read.entries.first?.totp == steam.replacingOccurrences(of: "&amp;", with: "&"))
        #expect(read.entries.first?.fields == [])
        let unknown = try database(entry([("Title", "u"), ("otp", "key=JBSWY3DPEHPK3PXP&amp;counter=3")]))
        #expect(unknown.entries.first?.totp == "key=JBSWY3DPEHPK3PXP&counter=3")
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
