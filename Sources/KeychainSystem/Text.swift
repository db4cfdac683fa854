import Glibc

// Text parsing on bytes and unicode scalars, never on Characters: "\r\n" is one Swift Character,
// so splitting a String on "\n" does not split CRLF text, and a combining mark after a quote or
// an "=" makes one Character with it, so the quote or "=" is not found.

/// The lines of `text`, split at every "\n", each without one trailing "\r" (CRLF files), and the
/// first without a byte order mark; numbered from 1.
package func lines(of text: String) -> [(number: Int, text: Substring)] {
    var result: [(number: Int, text: Substring)] = []
    var start = text.startIndex
    let utf8 = text.utf8
    var index = utf8.startIndex
    while true {
        let end = utf8[index...].firstIndex(of: UInt8(ascii: "\n")) ?? utf8.endIndex
        var line = text[start..<end]
        if line.utf8.last == UInt8(ascii: "\r") { line = text[start..<utf8.index(before: end)] }
        if result.isEmpty && line.unicodeScalars.first == "\u{FEFF}" {
            line = line[line.unicodeScalars.index(after: line.startIndex)...]
        }
        result.append((result.count + 1, line))
        guard end != utf8.endIndex else { return result }
        index = utf8.index(after: end)
        start = index
    }
}

/// A space or a tab: what a line's words are separated by.
package func isSpaceOrTab(_ scalar: Unicode.Scalar) -> Bool { scalar == " " || scalar == "\t" }

extension String {
    /// See ``Substring/trimming(leading:trailing:where:)``.
    package func trimming(
        leading: Bool = true, trailing: Bool = true,
        where isTrimmed: (Unicode.Scalar) -> Bool = { $0.properties.isWhitespace }
    ) -> Substring {
        self[...].trimming(leading: leading, trailing: trailing, where: isTrimmed)
    }
}

extension Substring {
    /// Without the scalars `isTrimmed` picks at the start (`leading`) and at the end (`trailing`),
    /// judged scalar by scalar; by default white space at both ends (Foundation's
    /// trimmingCharacters, without Foundation). The one trimmer of the library and the CLI.
    package func trimming(
        leading: Bool = true, trailing: Bool = true,
        where isTrimmed: (Unicode.Scalar) -> Bool = { $0.properties.isWhitespace }
    ) -> Substring {
        let scalars = unicodeScalars
        var start = scalars.startIndex
        var end = scalars.endIndex
        while leading, start < end, isTrimmed(scalars[start]) { start = scalars.index(after: start) }
        while trailing, start < end, isTrimmed(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        return Substring(scalars[start..<end])
    }

    /// The index of the first `scalar`, found scalar by scalar.
    package func firstIndex(ofScalar scalar: Unicode.Scalar) -> Index? {
        unicodeScalars.firstIndex(of: scalar)
    }
}

/// `text` with each UTF-8 byte for which `mustEncode` holds written as `%XX` (upper-case hex).
package func percentEncoded(_ text: String, where mustEncode: (UInt8) -> Bool) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for byte in text.utf8 {
        if mustEncode(byte) {
            bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
        } else {
            bytes.append(byte)
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// `text` with each `%XX` read back as its byte, or nil when a `%` is not followed by two hex
/// digits or the bytes are not UTF-8.
package func percentDecoded(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var iterator = Array(text.utf8).makeIterator()
    while let byte = iterator.next() {
        guard byte == UInt8(ascii: "%") else {
            bytes.append(byte)
            continue
        }
        guard let high = iterator.next(), let low = iterator.next(),
            let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
        else { return nil }
        bytes.append(value)
    }
    return String(validating: bytes, as: UTF8.self)
}

/// Whether `byte` is one of RFC 3986's unreserved characters (`A-Z a-z 0-9 - . _ ~`).
package func isUnreservedInURL(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
        UInt8(ascii: "~"):
        true
    default: false
    }
}

/// Pauses the calling thread for `seconds` (nothing when it is not above 0).
package func sleep(seconds: Double) {
    guard seconds > 0 else { return }
    usleep(UInt32(seconds * 1_000_000))
}

/// The value of the hexadecimal digit `byte` (either case), or nil.
package func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// The bytes that the hexadecimal digits `text` (either case, an even number of them) spell; nil
/// for anything else.
package func hexBytes(_ text: some StringProtocol) -> [UInt8]? {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
        guard let high = hexDigitValue(digits[index]), let low = hexDigitValue(digits[index + 1]) else { return nil }
        bytes.append(high << 4 | low)
    }
    return bytes
}

/// The well-formed UTF-8 scalar that begins at `index` of `bytes`, and its length in bytes; nil
/// where none does (a continuation byte, an overlong or cut sequence, a surrogate).
package func utf8Scalar(in bytes: [UInt8], at index: Int) -> (scalar: Unicode.Scalar, length: Int)? {
    let lead = bytes[index]
    let length = lead < 0x80 ? 1 : lead >= 0xF5 ? 0 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0
    guard length > 0, index + length <= bytes.count,
        let scalar = String(validating: bytes[index..<(index + length)], as: UTF8.self)?.unicodeScalars.first
    else { return nil }
    return (scalar, length)
}
