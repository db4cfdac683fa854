import KeychainSystem

// The files of variables that CI tools read, beside our own dotenv (DotEnv.swift): docker's
// `--env-file` and GitHub Actions' `$GITHUB_ENV`. Each value is written so that its reader gets
// it exactly, or refused; never escaped in a way the reader does not undo.

/// `NAME=value` lines as `docker run --env-file` reads them (docker/cli's
/// kvfile, restated as facts): a line is read up to LF, a CR before it dropped; the line's leading
/// white space is removed; the name runs to the first `=`, and the value is the rest, as it is
/// (no escapes, trailing white space kept). Newer versions also remove a pair of the same quote
/// around the value, older ones keep it; a line is at most 64 KiB; the file is UTF-8.
package enum DockerEnvironmentFile {
    /// The longest line docker reads (bufio.MaxScanTokenSize).
    package static let maximumLine = 65_536

    /// The text of `variables`, one `NAME=value` line each.
    /// - Throws: ``FormatError`` (bad data) naming the variable whose value no docker reads back
    ///   exactly: a line break (CR or LF) or NUL in it, a value in a pair of quotes (read with or
    ///   without them, by version), a line over 64 KiB.
    package static func text(of variables: [(name: String, key: String, value: String)]) throws(FormatError) -> String {
        var text = ""
        for (name, key, value) in variables {
            let shown = quotedValue(key, expected: "a key name")
            if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) {
                throw FormatError(
                    "the secret \(shown) holds a line break or NUL, which an env file of docker cannot hold; "
                        + "nothing was written")
            }
            if let first = value.utf8.first, first == UInt8(ascii: "\"") || first == UInt8(ascii: "'"),
                value.utf8.count >= 2, value.utf8.last == first
            {
                throw FormatError(
                    "the secret \(shown) is in a pair of quotes, which newer docker versions remove and older "
                        + "ones keep; nothing was written")
            }
            let line = "\(name)=\(value)\n"
            if line.utf8.count > maximumLine {
                throw FormatError(
                    "the secret \(shown) makes a line over 64 KiB, longer than docker reads; nothing was written")
            }
            text += line
        }
        return text
    }
}

/// `$GITHUB_ENV` lines in the runner's multi-line form: `NAME<<DELIMITER`, the value's lines,
/// `DELIMITER`. The runner reads lines ending in LF, CR LF or CR, joins the value's lines with LF,
/// and ends the value at the first line equal to the delimiter: so a value must hold no CR, and
/// no line of it may be the delimiter (a random one, checked).
package enum GitHubEnvironmentFile {
    /// The text of `variables`; `delimiter` makes a fresh random delimiter.
    /// - Throws: ``FormatError`` (bad data) naming a variable whose value holds a CR.
    package static func text(
        of variables: [(name: String, key: String, value: String)], delimiter: () -> String
    ) throws(FormatError) -> String {
        var text = ""
        for (name, key, value) in variables {
            if value.utf8.contains(0x0D) || value.utf8.contains(0) {
                throw FormatError(
                    "the secret \(quotedValue(key, expected: "a key name")) holds a CR or NUL, which the runner "
                        + "reads otherwise; nothing was written")
            }
            let lines = value.split(separator: "\n", omittingEmptySubsequences: false)
            var chosen = delimiter()
            while lines.contains(where: { $0 == chosen }) { chosen = delimiter() }
            text += "\(name)<<\(chosen)\n\(value)\n\(chosen)\n"
        }
        return text
    }

    /// The runner's `::add-mask::` commands for `values`: one for each piece of each as the
    /// runner cuts what it is given (split at every CR and LF and trimmed: it registers each
    /// piece of an `::add-mask::` value as a secret of its own), only the pieces of at least
    /// ``MaskedForms/minimumLength`` characters: sent a longer line, the runner would also mask
    /// every occurrence of a short piece of it (`"  xy  "` or `ab\rcd…` would mask every `xy`
    /// or `ab` in the log). Its `%` escaped as the runner unescapes it.
    package static func maskCommands(for values: [String]) -> String {
        var text = ""
        for value in values {
            for piece in MaskedForms.pieces(of: Array(value.utf8)) where !MaskedForms.isTooShort(piece) {
                text += "::add-mask::\(String(decoding: piece, as: UTF8.self).replacing("%", with: "%25"))\n"
            }
        }
        return text
    }
}
