import Foundation
import Testing

@testable import KeychainFormats
@testable import KeychainManagers

/// The CSV reader every manager's CSV goes through: RFC 4180, its encodings, and what it refuses.
@Suite("CSV files read row by row")
struct CSVTableTests {
    static func rows(_ bytes: [UInt8]) throws -> [CSVRows.Row] {
        var reader = try CSVRows(bytes, source: "'x.csv'")
        var rows: [CSVRows.Row] = []
        while let row = try reader.next() { rows.append(row) }
        return rows
    }

    static func utf16(_ text: String, bigEndian: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        for unit in text.utf16 {
            let pair = [UInt8(unit >> 8), UInt8(unit & 0xFF)]
            bytes += bigEndian ? pair : pair.reversed()
        }
        return bytes
    }

    static func rows(_ text: String) throws -> [CSVRows.Row] { try rows(Array(text.utf8)) }

    /// The rows `read` gives, or its error, as text to compare.
    static func outcome(_ read: () throws -> [CSVRows.Row]) -> String {
        do {
            return "\(try read())"
        } catch {
            return "error: \(error)"
        }
    }

    static func failure(_ bytes: [UInt8]) -> String {
        do {
            _ = try rows(bytes)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func quotedCellsHoldCommasQuotesAndLineBreaks() throws {
        let rows = try Self.rows("a,\"b,c\",\"say \"\"hi\"\"\"\n\"two\nlines\",\"\",x\r\n\"crlf\r\ninside\",,\n")
        #expect(
            rows.map(\.cells) == [["a", "b,c", "say \"hi\""], ["two\nlines", "", "x"], ["crlf\r\ninside", "", ""]])
        #expect(rows.map(\.line) == [1, 2, 4], "a row's line is the one it starts on, breaks in cells counted")
    }

    @Test func everyLineEndAndNoneAtTheEnd() throws {
        let expected = [["a", "b"], ["c", "d"], ["e", "f"]]
        for end in ["\n", "\r\n", "\r"] {
            let text = ["a,b", "c,d", "e,f"].joined(separator: end)
            #expect(try Self.rows(text).map(\.cells) == expected, "\(end.debugDescription) without a last one")
            #expect(try Self.rows(text + end).map(\.cells) == expected, "\(end.debugDescription) at the end too")
            #expect(try Self.rows(text + end).map(\.line) == [1, 2, 3])
        }
        #expect(try Self.rows("a\n\n\r\nb\n\n").map(\.cells) == [["a"], ["b"]], "empty lines are no rows")
        #expect(try Self.rows("a\n\n\r\nb\n\n").map(\.line) == [1, 4])
        #expect(try Self.rows("").isEmpty)
        #expect(try Self.rows(",\n").map(\.cells) == [["", ""]])
    }

    @Test func utf8WithOrWithoutItsMarkAndUTF16WithOne() throws {
        let text = "name,note\nCafé,日本 🔑\n"
        let expected = [["name", "note"], ["Café", "日本 🔑"]]
        #expect(try Self.rows(text).map(\.cells) == expected)
        #expect(try Self.rows([0xEF, 0xBB, 0xBF] + Array(text.utf8)).map(\.cells) == expected)
        let little = [0xFF, 0xFE] + Self.utf16(text, bigEndian: false)
        let big = [0xFE, 0xFF] + Self.utf16(text, bigEndian: true)
        #expect(try Self.rows(little).map(\.cells) == expected)
        #expect(try Self.rows(big).map(\.cells) == expected)
        #expect(Self.failure(Array(little.dropLast())).contains("odd number of bytes"))
        // A lone high surrogate.
        #expect(Self.failure([0xFF, 0xFE, 0x61, 0x00, 0x00, 0xD8, 0x62, 0x00]).contains("unpaired surrogate"))
    }

    @Test func latin1AndOtherBytesAreRefusedWithTheWayOut() {
        let latin1: [UInt8] = Array("name,password\nCaf".utf8) + [0xE9] + Array(",secret\n".utf8)
        let message = Self.failure(latin1)
        #expect(message.contains("'x.csv' is not UTF-8 (line 2)"), "\(message)")
        #expect(message.contains("iconv -f latin1 -t utf-8 FILE > FILE.utf8"))
        #expect(!message.contains("secret"))
        #expect(Self.failure([0x61, 0x2C, 0xC3]).contains("not UTF-8 (line 1)"), "a sequence cut at the end")
        let nul = Self.failure(Array("a,b\nc,d\0e\n".utf8))
        #expect(nul.contains("line 2 holds a NUL byte"), "\(nul)")
        let utf16WithoutMark = Self.failure(Self.utf16("ab", bigEndian: false))
        #expect(utf16WithoutMark.contains("UTF-16 without a byte order mark"))
    }

    @Test func anUnclosedQuoteIsRefusedNamingTheLineItOpensOn() {
        let message = Self.failure(Array("name,password\nok,fine\n\"open,secret\nmore\nlines".utf8))
        #expect(message.contains("'x.csv': line 3 opens a quoted cell that is never closed"), "\(message)")
        #expect(!message.contains("secret"))
        let after = Self.failure(Array("a,\"b\"c,d\n".utf8))
        #expect(after.contains("line 1 has text after the closing quote"), "\(after)")
    }

    @Test func theHeaderIsFoundWhateverItsCaseAndSpaces() {
        let header = CSVHeader(["\u{FEFF}Name", " URL ", "userName\t", ""])
        #expect(header.names == ["Name", "URL", "userName", ""])
        #expect(header.index("name") == 0 && header.index("url") == 1 && header.index("USERNAME") == 2)
        #expect(header.index("password") == nil && !header.has(["name", "password"]) && header.has(["url", "name"]))
    }

    @Test func aHundredThousandRowsAndAMebibyteCell() throws {
        var text = "name,url,username,password,note\n"
        for index in 0..<100_000 { text += "site \(index),https://\(index).example,user\(index),pw\(index),\n" }
        let export = try CSVExport.read(.chrome, ManagerInput(bytes: Array(text.utf8), source: "'big.csv'"))
        #expect(export.entries.count == 100_000)
        #expect(export.entries[99_999].key == "site 99999" && export.entries[99_999].password == "pw99999")

        let big = String(repeating: "a,\"b\"\n", count: (1 << 20) / 6) + "end"
        let quoted = "\"" + big.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        let rows = try Self.rows("name,note\r\nhuge," + quoted + "\r\nnext,1\r\n")
        #expect(rows.count == 3 && rows[1].cells[1] == big && rows[1].cells[1].utf8.count > 1 << 19)
        #expect(rows[2].cells == ["next", "1"] && rows[2].line == 2 + (1 << 20) / 6 + 1)
    }

    /// `import` reads a CSV file a piece at a time (only the row being read held): every split of
    /// the same bytes gives the same rows, and the same refusals, as the bytes read whole.
    @Test func readAPieceAtATimeItIsTheSameFile() throws {
        let texts = [
            "a,\"b,c\",\"say \"\"hi\"\"\"\n\"two\nlines\",\"\",x\r\n\"crlf\r\ninside\",,\n", "a\r\n\r\nb\r", "a\rb\r\n",
            "\u{FEFF}name,note\nCafé,日本 🔑\n", "", ",\n", "a,\"open\nnever closed", "a,\"x\"y,z\n", "a\u{0}b\n",
            String(repeating: "row,\"cell\"\"\"\r\n", count: 9_000),
        ]
        var inputs = texts.map { Array($0.utf8) }
        inputs += [
            [0xFF, 0xFE] + Self.utf16("name,note\r\nCafé,1\r\n", bigEndian: false), [0xFE, 0xFF, 0x00],
            Array("a,caf".utf8) + [0xE9] + Array("\n".utf8), [0xEF, 0xBB],
        ]
        for bytes in inputs {
            let whole = Self.outcome { try Self.rows(bytes) }
            for size in [1, 2, 3, 7, 1 << 16] {
                var offset = 0
                let pieces: () throws -> [UInt8]? = {
                    guard offset < bytes.count else { return nil }
                    defer { offset += size }
                    return Array(bytes[offset..<min(offset + size, bytes.count)])
                }
                let read = Self.outcome {
                    var reader = try CSVRows(pieces: pieces, source: "'x.csv'")
                    var rows: [CSVRows.Row] = []
                    while let row = try reader.next() { rows.append(row) }
                    return rows
                }
                #expect(read == whole, "\(bytes.prefix(24)) in pieces of \(size)")
            }
        }
    }

    @Test func formulaLookingCellsAreData() throws {
        let cells = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "=HYPERLINK(\"x\")"]
        let line = cells.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: ",")
        #expect(try Self.rows(line).first?.cells == cells)
    }
}
