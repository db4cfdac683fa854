import KeychainSystem

/// The shells `keychain-cli env` writes for, and how each reads a value as data: every byte but
/// NUL (which no environment variable holds) comes back as it was, whatever `$()`, backticks,
/// quotes, line breaks or bytes that are not UTF-8 it holds.
package enum ShellDialect: String, CaseIterable, Sendable {
    /// `export NAME='value'`, a `'` as `'\''`: every other byte stands for itself in single
    /// quotes, in every POSIX shell (dash, bash, zsh, ksh, busybox sh).
    case posix
    /// `export NAME='value'`, or `$'…'` with `\xHH` for control characters, `'`, `\` and bytes
    /// that are not UTF-8, so that printing the line on a terminal drives nothing.
    case bash, zsh
    /// `set -gx NAME 'value'`, with `\'` and `\\` inside quotes, and control characters and bytes
    /// that are not UTF-8 written outside them as `\XHH` (fish's escape for one byte).
    case fish

    /// The line that sets and exports `name` (a valid variable name) to `value`, ending in "\n".
    package func exportLine(name: String, value: [UInt8]) -> [UInt8] {
        switch self {
        case .posix, .bash, .zsh: Array("export \(name)=".utf8) + quoted(value) + [0x0A]
        case .fish: Array("set -gx \(name) ".utf8) + quoted(value) + [0x0A]
        }
    }

    /// `value` (no NUL byte: no shell variable holds one) as one word of this shell.
    package func quoted(_ value: [UInt8]) -> [UInt8] {
        switch self {
        case .posix: return Self.singleQuoted(value)
        case .bash, .zsh:
            let plain = Self.plainRuns(value)
            let allPlain = value.isEmpty || (plain.count == 1 && plain[0] == value.indices)
            return allPlain && !value.contains(UInt8(ascii: "'"))
                ? Self.singleQuoted(value) : Self.dollarQuoted(value, plain: plain)
        case .fish: return Self.fishQuoted(value)
        }
    }

    private static func singleQuoted(_ value: [UInt8]) -> [UInt8] {
        var result: [UInt8] = [UInt8(ascii: "'")]
        for byte in value {
            if byte == UInt8(ascii: "'") {
                result += Array(#"'\''"#.utf8)
            } else {
                result.append(byte)
            }
        }
        return result + [UInt8(ascii: "'")]
    }

    /// `$'…'`: the bytes of `plain` runs as they are, but `'` and `\` escaped; every other byte
    /// as `\xHH` (exactly two digits: bash and zsh read at most two).
    private static func dollarQuoted(_ value: [UInt8], plain: [Range<Int>]) -> [UInt8] {
        var result = Array("$'".utf8)
        var index = 0
        for run in plain + [value.endIndex..<value.endIndex] {
            while index < run.lowerBound {
                result += hexEscape(value[index], prefix: UInt8(ascii: "x"))
                index += 1
            }
            for byte in value[run] {
                if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\\") { result.append(UInt8(ascii: "\\")) }
                result.append(byte)
            }
            index = run.upperBound
        }
        return result + [UInt8(ascii: "'")]
    }

    /// fish: printable runs in `'…'` (`\'` and `\\` escaped), every other byte `\XHH` outside.
    private static func fishQuoted(_ value: [UInt8]) -> [UInt8] {
        guard !value.isEmpty else { return Array("''".utf8) }
        var result: [UInt8] = []
        var index = 0
        for run in plainRuns(value) + [value.endIndex..<value.endIndex] {
            while index < run.lowerBound {
                result += hexEscape(value[index], prefix: UInt8(ascii: "X"))
                index += 1
            }
            if !run.isEmpty {
                result.append(UInt8(ascii: "'"))
                for byte in value[run] {
                    if byte == UInt8(ascii: "'") || byte == UInt8(ascii: "\\") { result.append(UInt8(ascii: "\\")) }
                    result.append(byte)
                }
                result.append(UInt8(ascii: "'"))
            }
            index = run.upperBound
        }
        return result
    }

    private static func hexEscape(_ byte: UInt8, prefix: UInt8) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return [UInt8(ascii: "\\"), prefix, digits[Int(byte >> 4)], digits[Int(byte & 15)]]
    }

    /// The ranges of `value` that are printable UTF-8 (no C0 or C1 control character, no DEL),
    /// in order; the bytes between them are escaped.
    static func plainRuns(_ value: [UInt8]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start: Int?
        var index = 0
        while index < value.count {
            let length = printableScalarLength(value, at: index)
            if length > 0 {
                if start == nil { start = index }
                index += length
            } else {
                if let begun = start { runs.append(begun..<index) }
                start = nil
                index += 1
            }
        }
        if let start { runs.append(start..<value.count) }
        return runs
    }

    /// The length of the well-formed UTF-8 scalar at `index` when it is printable, else 0.
    private static func printableScalarLength(_ value: [UInt8], at index: Int) -> Int {
        guard let (scalar, length) = utf8Scalar(in: value, at: index) else { return 0 }
        return scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) ? 0 : length
    }
}
