import Foundation
import KeychainSystem
import Testing

@testable import KeychainFormats
@testable import KeychainKeePass

/// KeePassX 0.4's XML export and KeePass 2's own XML export, both through `KeePassXML.export`,
/// which `import --format keepass` calls for a file starting with `<`.
@Suite("KeePassX and KeePass 2 XML exports")
struct KeePassXXMLTests {
    static let keepassx = """
        <!DOCTYPE KEEPASSX_DATABASE>
        <database>
         <group>
          <title>Internet</title>
          <icon>1</icon>
          <group>
           <title>Mail</title>
           <icon>1</icon>
           <entry>
            <title>Webmail</title>
            <username>alice</username>
            <password>p&amp;w&lt;d</password>
            <url>https://mail.example</url>
            <comment>line one<br/>line two<br/></comment>
            <icon>1</icon>
            <creation>2017-01-01T00:00:00</creation>
            <lastaccess>2017-01-01T00:00:00</lastaccess>
            <lastmod>2017-01-01T00:00:00</lastmod>
            <expire>Never</expire>
            <bin>aGVsbG8=</bin>
            <bindesc>hello.txt</bindesc>
           </entry>
          </group>
          <entry>
           <title>Forum</title>
           <username></username>
           <password>x</password>
           <url/>
           <comment/>
           <icon>1</icon>
           <expire>2030-01-01T00:00:00</expire>
           <bin/>
           <bindesc/>
          </entry>
         </group>
         <group>
          <title>Backup</title>
          <icon>4</icon>
          <entry><title>old</title><password>o</password></entry>
         </group>
        </database>
        """

    static func export(_ xml: String) throws -> ManagerExport {
        try KeePassXML.export(of: Array(xml.utf8), source: "'db.xml'")
    }

    @Test func keePassXsExportKeepsEveryFieldAndTheAttachment() throws {
        for xml in [Self.keepassx, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + Self.keepassx] {
            let read = try Self.export(xml)
            #expect(read.entries.map(\.key) == ["Internet/Mail/Webmail", "Internet/Forum"])
            let mail = read.entries[0]
            #expect(mail.password == "p&w<d" && mail.notes == "line one\nline two\n")
            #expect(mail.fields == [.init("username", "alice"), .init("url", "https://mail.example")])
            #expect(read.entries[1].password == "x" && read.entries[1].notes == "")
            #expect(read.entries[1].fields == [.init("expires", "2030-01-01T00:00:00")])
            #expect(
                read.files == [
                    ManagerFile(entry: "Internet/Mail/Webmail", name: "hello.txt", bytes: Array("hello".utf8))
                ])
            #expect(read.notImported.count == 1 && read.notImported[0].contains("Backup"))
            for entry in read.entries { expectXReadsBack(entry) }
        }
        // Without the document type, as another tool may write it.
        let bare = Self.keepassx.replacingOccurrences(of: "<!DOCTYPE KEEPASSX_DATABASE>\n", with: "")
        #expect(try Self.export(bare).entries.count == 2)
    }

    /// UTF-16 with its byte order mark (the declaration saying so) is read as UTF-8 is; Latin-1 is
    /// refused, saying how to convert it.
    @Test func utf16IsReadAndLatin1IsRefused() throws {
        for xml in [Self.keepassx, Self.keepass2] {
            let text = xml.replacingOccurrences(of: "p&amp;w&lt;d", with: "pässwörd")
                .replacingOccurrences(of: "D&lt;INNeT?#", with: "pässwörd")
            let declared = text.replacingOccurrences(of: "encoding=\"utf-8\"", with: "encoding=\"UTF-16\"")
            let little: [UInt8] =
                [0xFF, 0xFE] + declared.utf16.flatMap { unit -> [UInt8] in [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
            let big: [UInt8] =
                [0xFE, 0xFF] + declared.utf16.flatMap { unit -> [UInt8] in [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
            for bytes in [little, big, [0xEF, 0xBB, 0xBF] + Array(text.utf8)] {
                let read = try KeePassXML.export(of: bytes, source: "'db.xml'")
                #expect(read.entries.first?.password == "pässwörd")
            }
            let latin1 = text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
            let error = try #require(throws: FormatError.self) { try KeePassXML.export(of: latin1, source: "'db.xml'") }
            #expect(error.description.contains("iconv -f latin1"), "\(error)")
        }
    }

    /// keepassxc-cli's decrypted XML is held once: UTF-8 is checked in place, not copied into a
    /// `String` and back (a copy nobody wipes); only a converted one (a byte order mark, UTF-16) is
    /// a buffer of its own, which `export` wipes.
    @Test func utf8IsCheckedWithoutACopy() throws {
        let plain = Array(Self.keepass2.utf8)
        #expect(try KeePassXXML.utf8(plain, source: "'db.xml'").sharesStorage(with: plain))
        let marked = [0xEF, 0xBB, 0xBF] + plain
        let converted = try KeePassXXML.utf8(marked, source: "'db.xml'")
        #expect(converted == plain && !converted.sharesStorage(with: marked))
        #expect(throws: FormatError.self) { try KeePassXXML.utf8(plain + [0xE9, 0x20], source: "'db.xml'") }
    }

    func expectXReadsBack(_ entry: PasswordEntry) {
        for field in entry.fields { #expect(EntryFields.value(of: field.name, in: entry.text) == field.value) }
        #expect(EntryFields.value(of: "password", in: entry.text) == entry.password)
    }

    /// Only KeePassX's bare document type: an internal subset (entities), an external DTD, another
    /// name, a second declaration, an undeclared entity are all refused.
    @Test func anyOtherDocumentTypeOrEntityIsRefused() throws {
        let body =
            "<database><group><title>g</title><entry><title>t</title><password>&x;</password></entry></group></database>"
        let hostile = [
            "<!DOCTYPE KEEPASSX_DATABASE [<!ENTITY x \"expanded\">]>" + body,
            "<!DOCTYPE KEEPASSX_DATABASE SYSTEM \"http://127.0.0.1:9/x.dtd\">" + body,
            "<!DOCTYPE KEEPASSX_DATABASE PUBLIC \"-//x//EN\" \"file:///etc/passwd\">" + body,
            "<!DOCTYPE KEEPASSX_DATABASE [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>" + body,
            "<!DOCTYPE database>" + body,
            body,
        ]
        for xml in hostile {
            let error = try #require(throws: FormatError.self) { try Self.export(xml) }
            #expect(!error.description.contains("expanded") && !error.description.contains("root:"), "\(error)")
        }
        // Groups and titles where KeePassX writes none: no crash, the entry under its own group.
        let odd = try Self.export(
            "<database><title>d</title><entry><group><title>x</title></group></entry><group><entry><group><title>y</title>"
                + "</group><title>t</title></entry></group></database>")
        #expect(odd.entries.map(\.key) == ["t"])
        let twice = "<!DOCTYPE KEEPASSX_DATABASE><!DOCTYPE KEEPASSX_DATABASE><database/>"
        #expect(throws: FormatError.self) { try Self.export(twice) }
        let other = try #require(throws: FormatError.self) {
            try KeePassXXML.export(of: Array("<KeePassFile/>".utf8), source: "'db.xml'")
        }
        #expect(other.description.contains("not database"))
        let truncated = String(Self.keepassx.prefix(300))
        let cut = try #require(throws: FormatError.self) { try Self.export(truncated) }
        #expect(cut.description.contains("not well-formed XML (line"), "\(cut)")
        let badBase64 = Self.keepassx.replacingOccurrences(of: "aGVsbG8=", with: "%%%")
        let bad = try #require(throws: FormatError.self) { try Self.export(badBase64) }
        #expect(bad.description.contains("'Internet/Mail/Webmail' is not valid base64"))
    }

    /// KeePass 2's own XML export (File > Export > KeePass XML (2.x)): the KeePassFile schema with
    /// its memory protection (`ProtectInMemory="True"`, the value in plain text), times, auto-type
    /// and the attachments' bytes in Meta; what a .kdbx holds inside (`Protected="True"`, the value
    /// encrypted) is refused.
    static let keepass2 = """
        <?xml version="1.0" encoding="utf-8" standalone="yes"?>
        <KeePassFile>
        \t<Meta>
        \t\t<Generator>KeePass</Generator>
        \t\t<MemoryProtection><ProtectTitle>False</ProtectTitle><ProtectPassword>True</ProtectPassword></MemoryProtection>
        \t\t<RecycleBinEnabled>False</RecycleBinEnabled>
        \t\t<RecycleBinUUID>AAAAAAAAAAAAAAAAAAAAAA==</RecycleBinUUID>
        \t\t<Binaries><Binary ID="0" Compressed="True">H4sIAAAAAAAEAMtIzcnJBwCGphA2BQAAAA==</Binary></Binaries>
        \t\t<CustomData />
        \t</Meta>
        \t<Root>
        \t\t<Group>
        \t\t\t<UUID>yK9QQpPCMkOmr7D4SFp0BQ==</UUID>
        \t\t\t<Name>keepass</Name>
        \t\t\t<Group>
        \t\t\t\t<UUID>AAAAAAAAAAAAAAAAAAAAAQ==</UUID>
        \t\t\t\t<Name>Social</Name>
        \t\t\t\t<Entry>
        \t\t\t\t\t<UUID>4csJ5O+X9E2lOHyv25WwQw==</UUID>
        \t\t\t\t\t<IconID>0</IconID>
        \t\t\t\t\t<Tags>fun</Tags>
        \t\t\t\t\t<Times><CreationTime>2017-01-01T00:00:00Z</CreationTime><Expires>False</Expires></Times>
        \t\t\t\t\t<String><Key>Notes</Key><Value>first&#xA;second</Value></String>
        \t\t\t\t\t<String><Key>Password</Key><Value ProtectInMemory="True">D&lt;INNeT?#</Value></String>
        \t\t\t\t\t<String><Key>Title</Key><Value>mastodon</Value></String>
        \t\t\t\t\t<String><Key>URL</Key><Value>https://mastodon.example/</Value></String>
        \t\t\t\t\t<String><Key>UserName</Key><Value>ostqxi</Value></String>
        \t\t\t\t\t<String><Key>PIN</Key><Value ProtectInMemory="True">1234</Value></String>
        \t\t\t\t\t<Binary><Key>hello.txt</Key><Value Ref="0" /></Binary>
        \t\t\t\t\t<AutoType><Enabled>True</Enabled><DataTransferObfuscation>0</DataTransferObfuscation></AutoType>
        \t\t\t\t\t<History />
        \t\t\t\t</Entry>
        \t\t\t</Group>
        \t\t</Group>
        \t\t<DeletedObjects />
        \t</Root>
        </KeePassFile>
        """

    @Test func keePass2sOwnExportIsReadAndAKDBXsInnerXMLIsRefused() throws {
        let read = try Self.export(Self.keepass2)
        #expect(read.entries.map(\.key) == ["Social/mastodon"])
        let entry = try #require(read.entries.first)
        #expect(entry.password == "D<INNeT?#" && entry.notes == "first\nsecond")
        #expect(
            entry.fields == [
                .init("username", "ostqxi"), .init("url", "https://mastodon.example/"), .init("PIN", "1234"),
                .init("tag", "fun"),
            ])
        // KeePass 2's XML holds its attachments' bytes in Meta's binaries (gzip): stored beside the entry.
        #expect(read.files == [ManagerFile(entry: "Social/mastodon", name: "hello.txt", bytes: Array("hello".utf8))])
        #expect(read.notImported.isEmpty)
        let inner = Self.keepass2.replacingOccurrences(of: "ProtectInMemory=\"True\"", with: "Protected=\"True\"")
        let error = try #require(throws: FormatError.self) { try Self.export(inner) }
        #expect(error.description.contains("holds encrypted values") && !error.description.contains("INNeT"))
    }
}
