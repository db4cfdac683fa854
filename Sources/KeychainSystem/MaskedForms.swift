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
        let forms = labelled(secret)
        return MaskForms(plain: forms.plain.map(\.form), acrossLines: forms.acrossLines.map(\.form))
    }

    /// ``of(_:)``, each form with what it is, as `scan` reports it: `plain` (the secret), an
    /// encoding of it (`base64`, `json`, `url`, …: ``MaskedEncodings``), `line N` (the Nth
    /// line of a secret of several, or `trimmed`: a secret of one line without its white space)
    /// or an encoding of one (`base64 of line N`). Where two are one byte string, the first
    /// named here (the secret before its lines, each before its encodings) keeps it.
    package static func labelled(_ secret: [UInt8]) -> (
        plain: [(form: [UInt8], label: String)], acrossLines: [(form: [UInt8], label: String)]
    ) {
        guard !isTooShort(secret) else { return ([], []) }
        var values = [(secret, "")]
        let lines = secret.split(omittingEmptySubsequences: true, whereSeparator: { $0 == 0x0A || $0 == 0x0D })
        for (index, line) in lines.enumerated() {
            let name = "line \(index + 1)"
            values += [(Array(line), name), (trimmed(Array(line)), lines.count == 1 ? "trimmed" : name)]
        }
        var seen: Set<[UInt8]> = []
        var plain: [(form: [UInt8], label: String)] = []
        var acrossLines: [(form: [UInt8], label: String)] = []
        func named(_ kind: String, _ value: String) -> String { value.isEmpty ? kind : "\(kind) of \(value)" }
        for (value, name) in values where !value.isEmpty && seen.insert(value).inserted {
            plain.append((value, name.isEmpty ? "plain" : name))
            plain += MaskedEncodings.labelledEscaped(value).map { ($0.form, named($0.kind, name)) }
            acrossLines += MaskedEncodings.base64Forms(of: value).map { ($0, named("base64", name)) }
        }
        var kept: Set<[UInt8]> = []
        plain = plain.filter { $0.form.count >= minimumLength && kept.insert($0.form).inserted }
        acrossLines = acrossLines.filter { $0.form.count >= minimumLength && kept.insert($0.form).inserted }
        return (plain, acrossLines)
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
