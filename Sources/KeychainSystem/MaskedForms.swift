/// The byte strings a ``MaskingStream`` hides: `plain` ones as they are, `acrossLines` ones
/// (base64) also with a line break (LF or CRLF) between any two of their bytes, as encoders wrap.
package struct MaskForms: Sendable, Equatable {
    package var plain: [[UInt8]]
    package var acrossLines: [[UInt8]]

    package init(plain: [[UInt8]] = [], acrossLines: [[UInt8]] = []) {
        self.plain = plain
        self.acrossLines = acrossLines
    }

    package var isEmpty: Bool { plain.isEmpty && acrossLines.isEmpty }

    package static func += (forms: inout MaskForms, more: MaskForms) {
        forms.plain += more.plain
        forms.acrossLines += more.acrossLines
    }
}

/// The byte strings that masked output hides for one secret: what GitHub's runner masks for a
/// value (the value, and each of its pieces split at CR and LF and trimmed, with each of its
/// value encoders applied to each) and the forms a program prints a value in most often
/// (JSON-escaped and URL-encoded in the spellings common encoders use, base64 wrapped); see
/// ``MaskedEncodings``.
///
/// None is shorter than ``minimumLength`` bytes: hiding every `a` would mangle the output and
/// hide nothing. (The runner has no such minimum: it masks a value of one character everywhere.)
package enum MaskedForms {
    /// The shortest secret, piece or form that is masked, in bytes; and in Unicode scalars, the
    /// shortest secret (a shorter one is announced as not masked).
    package static let minimumLength = 4

    /// Whether `secret` as a whole is too short to be masked.
    package static func isTooShort(_ secret: [UInt8]) -> Bool {
        (String(validating: secret, as: UTF8.self)?.unicodeScalars.count ?? secret.count) < minimumLength
    }

    /// The pieces of `secret` as GitHub's runner registers them: split at every CR and LF, each
    /// trimmed of white space (Unicode's, as .NET's `Trim` reads it), empty ones left out.
    package static func pieces(of secret: [UInt8]) -> [[UInt8]] {
        secret.split(omittingEmptySubsequences: true) { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }
            .map { trimmed(Array($0)) }.filter { !$0.isEmpty }
    }

    /// Whether some piece of a `secret` of several lines is too short to be hidden on its own.
    package static func hasShortLines(_ secret: [UInt8]) -> Bool {
        let pieces = pieces(of: secret)
        return pieces.count > 1 && pieces.contains { isTooShort($0) }
    }

    /// Every form of `secret` to hide, without repeats.
    package static func of(_ secret: [UInt8]) -> MaskForms {
        guard !isTooShort(secret) else { return MaskForms() }
        var values = [secret]
        for line in secret.split(omittingEmptySubsequences: true, whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
            values += [Array(line), trimmed(Array(line))]
        }
        var seen: Set<[UInt8]> = []
        var forms = MaskForms()
        for value in values where !value.isEmpty && seen.insert(value).inserted {
            forms.plain += [value] + MaskedEncodings.escaped(value)
            forms.acrossLines += MaskedEncodings.base64Forms(of: value)
        }
        var kept: Set<[UInt8]> = []
        forms.plain = forms.plain.filter { $0.count >= minimumLength && kept.insert($0).inserted }
        forms.acrossLines = forms.acrossLines.filter { $0.count >= minimumLength && kept.insert($0).inserted }
        return forms
    }

    /// `bytes` without white space at either end (by Unicode scalar where they are UTF-8).
    static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            let space: Set<UInt8> = [0x20, 0x09, 0x0B, 0x0C]
            return Array(bytes.drop(while: space.contains).reversed().drop(while: space.contains).reversed())
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return [] }
        return Array(Substring(scalars[first...last]).utf8)
    }
}
