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

extension String {
    /// Without trailing spaces and tabs.
    package func trimmingSuffixSpaces() -> String {
        var scalars = unicodeScalars[...]
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}

extension Substring {
    /// Without leading and trailing white space, judged scalar by scalar (Foundation's
    /// trimmingCharacters, without Foundation).
    package func trimmingSpaces() -> Substring {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return self[endIndex...] }
        return self[first...last]
    }

    /// The index of the first `scalar`, found scalar by scalar.
    package func firstIndex(ofScalar scalar: Unicode.Scalar) -> Index? {
        unicodeScalars.firstIndex(of: scalar)
    }
}

/// A text input that cannot be read: what is wrong and where ("FILE:LINE: reason"), and whether
/// it is a usage mistake (an env file or template the user wrote, 64) or bad data (an import
/// file, 65).
package struct FormatError: Error, CustomStringConvertible {
    package var description: String
    package var isUsageError: Bool

    package init(_ description: String, isUsageError: Bool = false) {
        self.description = description
        self.isUsageError = isUsageError
    }
}
