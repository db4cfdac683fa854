// How text from outside (names, paths, values) is shown in one line of a message or listing.

/// `text` made safe for one line of a terminal or a line-oriented listing: a backslash becomes
/// `\\`, tab, newline and carriage return become `\t`, `\n` and `\r`, and every other control
/// character (C0, DEL, C1), the line and paragraph separators U+2028 and U+2029, and the bidi
/// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, which reorder what a terminal
/// shows) become `\u{XXXX}`. Other text is unchanged, so ordinary names print as they are.
public func escapedForDisplay(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var result = ""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\\": result += "\\\\"
        case "\t": result += "\\t"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case _ where needsEscape(scalar):
            let hex = String(scalar.value, radix: 16, uppercase: true)
            result += "\\u{" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "}"
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result
}

private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x5C, 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x061C, 0x200E, 0x200F, 0x202A...0x202E,
        0x2066...0x2069:
        true
    default: false
    }
}

package func shellQuoted(_ s: String) -> String {
    let safe = s.unicodeScalars.allSatisfy {
        ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            || "-_./:@%+=".unicodeScalars.contains($0)
    }
    if safe && !s.isEmpty { return s }
    return "'" + s.replacing("'", with: "'\\''") + "'"
}

package func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
}
