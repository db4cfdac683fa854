import KeychainFormats

/// A CSV file as RFC 4180 has it, read a row at a time: cells split at commas, a cell in double
/// quotes holding commas, line breaks and `""` for a quote; rows ended by LF, CRLF or a lone CR,
/// the last one with or without. UTF-8 (its byte order mark skipped) and UTF-16 with a byte
/// order mark are read; other bytes are refused. An empty line is no row.
package struct CSVRows {
    /// A row: its cells, and the line of the file it starts on (1 for the first).
    package struct Row: Sendable, Equatable {
        package var cells: [String]
        package var line: Int
    }

    /// The file's bytes read so far and not yet dropped (from the row being read on), and where
    /// in them the reader is.
    private var bytes: [UInt8]
    private var position: Int
    private var line = 1
    private let source: String
    /// The rest of a file read a piece at a time: its next piece, nil at its end.
    private var more: (() throws -> [UInt8]?)?

    /// The rows of `bytes`, a file that messages call `source`.
    /// - Throws: ``FormatError`` for UTF-16 with an odd length or unpaired surrogates.
    package init(_ bytes: [UInt8], source: String) throws {
        self.source = source
        self.bytes = try ExportText.utf8(bytes, source: source)
        position = 0
    }

    /// The rows of a file read a piece at a time from `pieces` (nil at its end), so that only
    /// the row being read is held, however long the file: the same rows as ``init(_:source:)``
    /// of its bytes. A UTF-16 file is read whole to be transcoded.
    /// - Throws: what `pieces` throws, and ``FormatError`` as ``init(_:source:)``.
    package init(pieces: @escaping () throws -> [UInt8]?, source: String) throws {
        var start: [UInt8] = []
        var ended = false
        // Enough of the start to see a byte order mark.
        while start.count < 3, let piece = try pieces() { start += piece }
        if start.starts(with: [0xFF, 0xFE]) || start.starts(with: [0xFE, 0xFF]) {
            while let piece = try pieces() { start += piece }
            ended = true
        }
        try self.init(start, source: source)
        if !ended { more = pieces }
    }

    /// Whether the byte `ahead` after `position` is there, reading more of the file as needed.
    private mutating func has(_ ahead: Int = 0) throws -> Bool {
        while position + ahead >= bytes.count {
            guard let piece = try more?() else {
                more = nil
                return false
            }
            bytes += piece
        }
        return true
    }

    /// The next row, nil after the last.
    /// - Throws: ``FormatError`` for a quote never closed, text after a closing quote, a NUL
    ///   byte or bytes that are no UTF-8, naming the line.
    package mutating func next() throws -> Row? {
        // What earlier rows took is dropped (now and then: each drop moves the rest).
        if more != nil, position >= 1 << 16 {
            bytes.removeFirst(position)
            position = 0
        }
        // Empty lines are skipped.
        while try has(), bytes[position] == 0x0A || bytes[position] == 0x0D {
            try endLine()
        }
        guard try has() else { return nil }
        let first = line
        var cells: [String] = []
        while true {
            cells.append(try cell(row: first))
            guard try has() else { return Row(cells: cells, line: first) }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try endLine()
            return Row(cells: cells, line: first)
        }
    }

    /// Steps over the line end at `position` (CRLF, LF or CR).
    private mutating func endLine() throws {
        if bytes[position] == 0x0D, try has(1), bytes[position + 1] == 0x0A { position += 1 }
        position += 1
        line += 1
    }

    /// The cell at `position`, which is left on the comma or line end after it (or the end).
    private mutating func cell(row: Int) throws -> String {
        let cellLine = line
        var value: [UInt8] = []
        if try has(), bytes[position] == UInt8(ascii: "\"") {
            position += 1
            while true {
                guard try has() else {
                    throw FormatError(
                        "\(source): line \(cellLine) opens a quoted cell that is never closed; nothing was stored. "
                            + "Is the file cut short, or a quote missing?")
                }
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    if try has(1), bytes[position + 1] == UInt8(ascii: "\"") {
                        value.append(byte)
                        position += 2
                        continue
                    }
                    position += 1
                    break
                }
                if byte == 0x0D || byte == 0x0A {
                    // A line break inside the cell, kept as the file has it.
                    value.append(byte)
                    if byte == 0x0D, try has(1), bytes[position + 1] == 0x0A {
                        value.append(0x0A)
                        position += 1
                    }
                    position += 1
                    line += 1
                    continue
                }
                value.append(byte)
                position += 1
            }
            if try has(), !Self.endsCell(bytes[position]) {
                throw FormatError(
                    "\(source): line \(line) has text after the closing quote of a cell; nothing was stored. "
                        + "A quote inside a quoted cell is written twice (\"\")")
            }
        } else {
            let start = position
            while try has(), !Self.endsCell(bytes[position]) {
                position += 1
            }
            value = Array(bytes[start..<position])
        }
        if value.contains(0) {
            throw FormatError(
                "\(source): line \(cellLine) holds a NUL byte, which no text export has; nothing was stored. "
                    + "Is it UTF-16 without a byte order mark, or no CSV at all?")
        }
        guard let text = String(validating: value, as: UTF8.self) else {
            throw FormatError(
                "\(source) is not UTF-8 (line \(cellLine)): convert it, e.g. iconv -f latin1 -t utf-8 FILE > FILE.utf8, "
                    + "and import that; nothing was stored")
        }
        return text
    }

    /// Whether `byte` ends a cell: a comma, LF or CR.
    private static func endsCell(_ byte: UInt8) -> Bool { byte == 0x2C || byte == 0x0A || byte == 0x0D }
}

/// A CSV file's first line: its column names as the file has them (a byte order mark and the
/// spaces around each left out), found whatever their case.
package struct CSVHeader: Sendable {
    package let names: [String]
    private let lowered: [String]

    package init(_ cells: [String]) {
        names = cells.map { $0.trimmingBOMAndSpaces() }
        lowered = names.map { $0.lowercased() }
    }

    /// The index of the first column called `name` (any case), nil when there is none.
    package func index(_ name: String) -> Int? { lowered.firstIndex(of: name.lowercased()) }

    /// Whether there is a column of each of `names`.
    package func has(_ names: [String]) -> Bool { names.allSatisfy { index($0) != nil } }
}

extension StringProtocol {
    /// The text without byte order marks, spaces and tabs at either end.
    func trimmingBOMAndSpaces() -> String {
        let text = String(self)
        // Most names and URLs have none: their first and last bytes say so (a mark ends in BF).
        guard let first = text.utf8.first, let last = text.utf8.last,
            [0x20, 0x09, 0xEF].contains(first) || [0x20, 0x09, 0xBF].contains(last)
        else { return text }
        let trimmed = text.unicodeScalars.drop { $0 == "\u{FEFF}" || $0 == " " || $0 == "\t" }
        let kept = trimmed.reversed().drop { $0 == "\u{FEFF}" || $0 == " " || $0 == "\t" }
        return String(String.UnicodeScalarView(kept.reversed()))
    }
}
