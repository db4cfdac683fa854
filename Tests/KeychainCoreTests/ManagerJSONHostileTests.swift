import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// Every JSON reader against what a damaged, hostile or wrongly encoded file holds: refused with
/// one line that names the place and never a value, or read exactly; never half read.
@Suite("Password managers' JSON: hostile input")
struct ManagerJSONHostileTests {
    /// A small valid export of each kind, holding the password `SECRET-pw`.
    static func sample(_ kind: JSONExport.Kind, value: String = "SECRET-pw") -> String {
        switch kind {
        case .dashlane: return #"{"AUTHENTIFIANT": [{"title": "t", "password": "\#(value)", "login": "me"}]}"#
        case .enpass:
            return
                #"{"folders": [], "items": [{"title": "t", "fields": [{"type": "password", "value": "\#(value)"}]}]}"#
        case .protonpass:
            return #"{"encrypted": false, "vaults": {"s": {"name": "v", "items": [{"state": 1, "data": {"#
                + #""type": "login", "metadata": {"name": "t", "note": ""}, "content": {"password": "\#(value)"}}}]}}}"#
        case .onePasswordInterchange:
            return #"{"typeName": "passwords.Password", "title": "t", "secureContents": {"password": "\#(value)"}}"#
                + "\n***5642bee8-a5ff-11dc-8314-0800200c9a66***\n"
        }
    }

    static func read(_ kind: JSONExport.Kind, _ bytes: [UInt8]) throws -> ManagerExport {
        try JSONExport.read(kind, ManagerInput(bytes: bytes, source: "'export.json'"))
    }

    @Test(arguments: JSONExport.Kind.allCases)
    func theSampleReadsAndItsPasswordIsExact(kind: JSONExport.Kind) throws {
        let read = try Self.read(kind, Array(Self.sample(kind).utf8))
        #expect(read.entries.count == 1 && read.entries.first?.password == "SECRET-pw")
    }

    @Test(arguments: JSONExport.Kind.allCases)
    func truncatedInvalidAndRepeatedAreRefusedWithoutTheValue(kind: JSONExport.Kind) throws {
        let sample = Self.sample(kind)
        let cases: [(String, String)] = [
            (String(sample.prefix(sample.count / 2)), "is not valid JSON (line 1"),
            (sample.replacingOccurrences(of: "\"SECRET-pw\"", with: "'SECRET-pw'"), "a value is expected"),
            (sample.replacingOccurrences(of: "\"SECRET-pw\"", with: "\"SECRET-pw\", \"zz\": 1, \"zz\": 2"), "twice"),
            (
                sample.replacingOccurrences(of: "\"SECRET-pw\"", with: "\"SECRET-pw\", \"zz\": [1,]"),
                "has a comma right before a closing bracket, which JSON does not allow; nothing was stored. Remove"
            ),
            (
                sample.replacingOccurrences(of: "SECRET-pw", with: "SECRET\u{0}pw"),
                "a control character inside a string"
            ),
            (sample.replacingOccurrences(of: "SECRET-pw", with: "SECRET\\ud800pw"), "an unpaired surrogate"),
        ]
        for (text, expected) in cases {
            let error = try #require(throws: FormatError.self) { try Self.read(kind, Array(text.utf8)) }
            #expect(error.description.contains(expected), "\(error)")
            #expect(!error.description.contains("SECRET") && !error.description.contains("\n"), "\(error)")
        }
    }

    @Test(arguments: JSONExport.Kind.allCases)
    func utf16WithItsMarkIsReadAndLatin1IsRefusedSayingHowToConvert(kind: JSONExport.Kind) throws {
        let sample = Self.sample(kind, value: "pässwörd")
        let little: [UInt8] =
            [0xFF, 0xFE] + sample.utf16.flatMap { unit -> [UInt8] in [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        let big: [UInt8] =
            [0xFE, 0xFF] + sample.utf16.flatMap { unit -> [UInt8] in [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        let marked: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(sample.utf8)
        for bytes in [little, big, marked] {
            #expect(try Self.read(kind, bytes).entries.first?.password == "pässwörd")
        }
        let latin1 = sample.unicodeScalars.map { UInt8($0.value) }
        let error = try #require(throws: FormatError.self) { try Self.read(kind, latin1) }
        #expect(error.description.contains("is not UTF-8 text") && error.description.contains("iconv -f latin1"))
        let empty = try #require(throws: FormatError.self) { try Self.read(kind, Array(" \n".utf8)) }
        #expect(empty.description.contains("is empty"))
    }

    @Test(arguments: JSONExport.Kind.allCases)
    func aMebibyteValueAnEscapedNULAndDeepNesting(kind: JSONExport.Kind) throws {
        let huge = String(repeating: "x", count: 1 << 20)
        #expect(try Self.read(kind, Array(Self.sample(kind, value: huge).utf8)).entries.first?.password == huge)
        let nul = try Self.read(kind, Array(Self.sample(kind, value: "a\\u0000b").utf8))
        #expect(nul.entries.first?.password == "a\u{0}b")
        for entry in nul.entries { expectReadsBack(entry) }
        let deep = String(repeating: "[", count: 100_000)
        let error = try #require(throws: FormatError.self) { try Self.read(kind, Array(deep.utf8)) }
        #expect(error.description.contains("more than 200 levels"), "\(error)")
    }

    @Test func theReaderKeepsOrderAndNumbersAsWritten() throws {
        let node = try JSONReader.parse(#"{"b": 0.10, "a": 12345678901234567890, "c": [true, null, -1e5]}"#)
        #expect(node.members?.map(\.name) == ["b", "a", "c"])
        #expect(node["b"]?.text == "0.10" && node["a"]?.text == "12345678901234567890")
        #expect(node["c"]?.text == "[true,null,-1e5]")
        for bad in [
            "01", "1.", "-", "1e", "+1", "\"\\x\"", "\"\\u12G4\"", "\"open", "[1 2]", "{\"a\" 1}", "nul", "1 2",
        ] {
            #expect(throws: JSONReader.Failure.self, "\(bad)") { try JSONReader.parse(bad[...]) }
        }
        let twice = try #require(throws: JSONReader.Failure.self) { try JSONReader.parse("{\n\"a\": 1,\n\"a\": 2}") }
        #expect(twice == .init(line: 3, reason: "a field given twice", repeated: "a"))
    }

    /// A failure says where its object is, from the top down, and an export's reader names the
    /// entry that holds it.
    @Test func aFailureSaysWhereItsObjectIs() throws {
        let nested = try #require(throws: JSONReader.Failure.self) {
            try JSONReader.parse(#"{"vaults": [{}, {"items": [1, 2, {"x": [], "x": 1}]}]}"#)
        }
        #expect(nested.path == [.member("vaults"), .element(1), .member("items"), .element(2)])
        #expect(JSONReader.place(of: nested.path, ["vaults": "vault", "items": "item"]) == "vault 2, item 3")
        #expect(JSONReader.place(of: nested.path, ["tokens": "token"]) == nil)
        let comma = try #require(throws: JSONReader.Failure.self) { try JSONReader.parse("[0, [1,]]") }
        #expect(comma.isTrailingComma && comma.path == [.element(1)])
        #expect(JSONReader.place(of: comma.path, ["": "token"]) == "token 2")
    }

    /// 100,000 items read within reason (a few seconds in a debug build).
    @Test func aHundredThousandItems() throws {
        let item = #"{"title": "t", "password": "p", "login": "me", "domain": "https://example.com"}"#
        let text = #"{"AUTHENTIFIANT": ["# + Array(repeating: item, count: 100_000).joined(separator: ",") + "]}"
        let start = ContinuousClock.now
        let read = try Self.read(.dashlane, Array(text.utf8))
        #expect(read.entries.count == 100_000)
        #expect(ContinuousClock.now - start < .seconds(60))
    }
}
