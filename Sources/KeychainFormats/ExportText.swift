/// The encodings another program's export may come in, read the same way for every format:
/// UTF-8 (a byte order mark dropped) or UTF-16 with its byte order mark (as Windows' tools save
/// it); anything else is refused with the line that converts it.
package enum ExportText {
    /// The UTF-8 bytes of `bytes`: as they are after a UTF-8 byte order mark, or UTF-16 (little- or
    /// big-endian, after its byte order mark) transcoded. Not checked to be UTF-8: a reader that
    /// goes line by line says where it is not.
    /// - Throws: ``FormatError`` for UTF-16 cut short or holding an unpaired surrogate.
    package static func utf8(_ bytes: [UInt8], source: String) throws -> [UInt8] {
        if bytes.starts(with: utf8Mark) { return Array(bytes.dropFirst(utf8Mark.count)) }
        guard utf16Marks.contains(where: bytes.starts(with:)) else { return bytes }
        guard bytes.count % 2 == 0 else {
            throw FormatError(
                "\(source) is UTF-16 with an odd number of bytes, so it is cut short; nothing was stored. Export it again"
            )
        }
        let bigEndian = bytes[0] == 0xFE
        let units = stride(from: 2, to: bytes.count, by: 2).lazy.map { index -> UInt16 in
            let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
            return bigEndian ? first << 8 | second : second << 8 | first
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count / 2)
        let failed = transcode(units.makeIterator(), from: UTF16.self, to: UTF8.self, stoppingOnError: true) {
            output.append($0)
        }
        if failed {
            throw FormatError(
                "\(source) is UTF-16 holding a broken character (an unpaired surrogate); nothing was stored. "
                    + "Export it again, or convert it to UTF-8 with iconv -f utf-16 -t utf-8")
        }
        return output
    }

    /// The text of `bytes` as ``utf8(_:source:)`` reads it, which must be UTF-8.
    /// - Throws: ``FormatError`` as ``validUTF8(_:source:what:)``.
    package static func text(_ bytes: [UInt8], source: String, what: String? = nil) throws -> String {
        String(decoding: try validUTF8(bytes, source: source, what: what), as: UTF8.self)
    }

    /// The UTF-8 bytes of `bytes` as ``utf8(_:source:)`` gives them, checked to be UTF-8 without
    /// making a `String` of them: `bytes` itself (no copy) when it is UTF-8 without a byte order
    /// mark, so that a decrypted export is held once and wiped by its caller.
    /// - Throws: ``FormatError`` as ``utf8(_:source:)``, and for bytes that are no UTF-8 (Latin-1),
    ///   saying how to convert them; `what` names the export expected (`a Dashlane JSON export`).
    package static func validUTF8(_ bytes: [UInt8], source: String, what: String? = nil) throws -> [UInt8] {
        let converted = try utf8(bytes, source: source)
        let broken = transcode(converted.makeIterator(), from: UTF8.self, to: UTF8.self, stoppingOnError: true) { _ in }
        guard !broken else {
            throw FormatError(
                "\(source) is not UTF-8 text\(what.map { ", so not \($0)" } ?? ""); nothing was stored. If it is "
                    + "Latin-1, convert it (iconv -f latin1 -t utf-8 FILE > FILE.utf8) and import that")
        }
        return converted
    }

    /// The byte order marks: UTF-8's, and UTF-16's little- and big-endian.
    static let utf8Mark: [UInt8] = [0xEF, 0xBB, 0xBF]
    static let utf16Marks: [[UInt8]] = [[0xFF, 0xFE], [0xFE, 0xFF]]

    /// Whether `bytes` start as a zip does (a local file header).
    package static func isZip(_ bytes: [UInt8]) -> Bool { bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) }

    /// The first byte of `bytes` that says what the export is: not white space, a byte order
    /// mark or the zero half of a UTF-16 code unit; nil when there is none.
    package static func firstByte(of bytes: [UInt8]) -> UInt8? {
        var rest = bytes[...]
        if let mark = ([utf8Mark] + utf16Marks).first(where: bytes.starts(with:)) { rest = rest.dropFirst(mark.count) }
        return rest.first { ![0, 0x09, 0x0A, 0x0D, 0x20].contains($0) }
    }
}
