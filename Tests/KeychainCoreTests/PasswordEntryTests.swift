import Foundation
import Testing

@testable import KeychainFormats

/// The layout import stores a password manager's entries in (pass's), and reading fields back.
@Suite("PasswordEntry: pass's layout, written and read back")
struct PasswordEntryTests {
    @Test func anEntryWithAPasswordOnlyIsThePasswordAlone() {
        #expect(PasswordEntry(path: ["a"], password: "hunter2").text == "hunter2")
        #expect(EntryFields.value(of: "password", in: "hunter2") == "hunter2")
        #expect(EntryFields.value(of: "notes", in: "hunter2") == nil)
        #expect(EntryFields.value(of: "username", in: "hunter2") == nil)
    }

    @Test func theLayoutIsPasssWithFieldsTotpAndNotes() {
        let entry = PasswordEntry(
            path: ["Work", "", "github"], password: "pw",
            fields: [.init("username", "alice"), .init("url", "https://a"), .init("url", "https://b")],
            totp: "otpauth://totp/x?secret=JBSWY3DPEHPK3PXP", notes: "line one\nline two")
        #expect(entry.key == "Work/github")
        #expect(
            entry.text
                == "pw\nusername: alice\nurl: https://a\nurl: https://b\notpauth://totp/x?secret=JBSWY3DPEHPK3PXP\n\nline one\nline two"
        )
        #expect(EntryFields.value(of: "URL", in: entry.text) == "https://a", "the first, whatever the case")
        #expect(EntryFields.value(of: "otp", in: entry.text) == entry.totp)
        #expect(EntryFields.value(of: "notes", in: entry.text) == "line one\nline two")
        #expect(EntryFields.names(in: entry.text) == ["username", "url", "url"])
    }

    /// Whatever a name, value, password or note holds, it reads back exactly: random ones with
    /// line breaks (LF, CRLF, CR, U+2028), quotes, colons, backslashes, combining marks, empties.
    @Test func everyFieldReadsBackExactly() {
        var random = SystemRandomNumberGenerator()
        let pieces = [
            "a", "b", " ", ":", ": ", "\"", "\\", "\n", "\r\n", "\r", "\u{2028}", "\u{301}", "é", "x: y", "\t", "{}",
            "otpauth://", "", "\"x\"", "\"a\\nb\"",
        ]
        func text(_ count: Int) -> String {
            (0..<Int.random(in: 0...count, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
        }
        for _ in 0..<500 {
            let names = (0..<3).map { index in "f\(index)" + text(3) }
            let values = names.map { _ in text(5) }
            let password = text(4)
            let notes = Bool.random(using: &random) ? "" : "n" + text(6)
            let entry = PasswordEntry(
                path: ["p"], password: password, fields: zip(names, values).map { .init($0, $1) }, notes: notes)
            let stored = entry.text
            #expect(EntryFields.value(of: "password", in: stored) == password, "\(stored.debugDescription)")
            #expect(
                EntryFields.value(of: "notes", in: stored) == (notes.isEmpty ? nil : notes),
                "\(stored.debugDescription)")
            #expect(EntryFields.names(in: stored) == names, "\(stored.debugDescription)")
            for (name, value) in zip(names, values)
            where names.first(where: { $0.lowercased() == name.lowercased() }) == name {
                #expect(
                    EntryFields.value(of: name, in: stored) == value,
                    "\(name.debugDescription) in \(stored.debugDescription)")
            }
        }
    }

    /// A text that starts with `"` is written and read as it is (a pass entry's `"hunter2"`,
    /// quotes included), unless it reads as the JSON string of a text with a line break: then it
    /// is written as a JSON string itself.
    @Test func aLeadingQuoteIsKeptAsItIs() {
        #expect(EntryFields.value(of: "password", in: "\"hunter2\"\nlogin: a") == "\"hunter2\"")
        #expect(EntryFields.value(of: "login", in: "pw\nlogin: \"x\"") == "\"x\"")
        #expect(EntryFields.names(in: "pw\n\"q\": v") == ["\"q\""])
        for tricky in ["\"hunter2\"", #""a\nb""#, #""\"a\\nb\"""#, "\"", "\"\"", "\"a\nb\""] {
            let entry = PasswordEntry(path: ["p"], password: tricky, fields: [.init(tricky + ":", tricky)])
            #expect(EntryFields.value(of: "password", in: entry.text) == tricky, "\(entry.text.debugDescription)")
            #expect(EntryFields.names(in: entry.text) == [tricky + ":"], "\(entry.text.debugDescription)")
            #expect(EntryFields.value(of: tricky + ":", in: entry.text) == tricky, "\(entry.text.debugDescription)")
        }
    }

    /// Field names are made unique and readable: the reserved ones and repeats get a number.
    @Test func fieldNamesAreMadeReadable() {
        let entry = PasswordEntry(
            path: ["p"], password: "pw",
            fields: [
                .init("url", "a"), .init("URL", "b"), .init("notes", "n"), .init("otp", "o"), .init("url (2)", "c"),
            ]
        ).withReadableFieldNames()
        #expect(entry.fields.map(\.name) == ["url", "URL (2)", "notes (2)", "otp (2)", "url (2) (2)"])
        for field in entry.fields { #expect(EntryFields.value(of: field.name, in: entry.text) == field.value) }
    }

    /// A pass entry as people write them: CRLF line ends, a field without a value, free text.
    @Test func aPassEntryAsPeopleWriteIt() {
        let text =
            "s3cret\r\nlogin: bob\r\nnote without colon\r\nempty:\r\notpauth://totp/a?secret=ABC\r\n\r\nfree\r\ntext"
        #expect(EntryFields.value(of: "password", in: text) == "s3cret")
        #expect(EntryFields.value(of: "login", in: text) == "bob")
        #expect(EntryFields.value(of: "empty", in: text) == "")
        #expect(EntryFields.value(of: "otp", in: text) == "otpauth://totp/a?secret=ABC")
        #expect(EntryFields.value(of: "notes", in: text) == "free\r\ntext")
        #expect(EntryFields.value(of: "note without colon", in: text) == nil)
    }

    /// An entry's quoted values are written byte for byte as JSONEncoder writes the string (as
    /// they were before the one writer): every ASCII scalar, controls, separators, a BOM.
    @Test func aQuotedValueIsWhatJSONEncoderWrites() throws {
        var text = ""
        for value in 0..<0x80 { text.unicodeScalars.append(Unicode.Scalar(value)!) }
        text += "\u{2028}\u{2029}\u{FEFF}é/"
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        #expect(JSONNode.quoted(text) == String(decoding: try encoder.encode(text), as: UTF8.self))
        #expect(EntryFields.quotedIfNeeded("two\nlines") == #""two\nlines""#)
        #expect(EntryFields.quotedIfNeeded("plain") == "plain")
    }
}
