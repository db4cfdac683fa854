import KeychainFormats
import KeychainSystem

/// How each shell reads one word that ``ShellDialect/quoted(_:)`` wrote, by the shells' manuals
/// (not by our writer): the fuzz target checks that every value comes back byte for byte. The
/// tests replay the corpus through the real bash, zsh, dash and fish as well.
enum ShellWords {
    /// The bytes `word` stands for in `dialect`; nil when it is not one word of the quoting this
    /// reader knows (which the writer must never produce).
    static func read(_ word: [UInt8], as dialect: ShellDialect) -> [UInt8]? {
        var result: [UInt8] = []
        var index = 0
        func byte(_ offset: Int) -> UInt8? { index + offset < word.count ? word[index + offset] : nil }
        while index < word.count {
            switch (dialect, word[index]) {
            case (.posix, UInt8(ascii: "'")), (.bash, UInt8(ascii: "'")), (.zsh, UInt8(ascii: "'")):
                // POSIX 2.2.2: every byte up to the next ' stands for itself.
                guard let end = word[(index + 1)...].firstIndex(of: UInt8(ascii: "'")) else { return nil }
                result += word[(index + 1)..<end]
                index = end + 1
            case (.posix, UInt8(ascii: "\\")):
                // 2.2.1: outside quotes a backslash keeps the next byte.
                guard let next = byte(1) else { return nil }
                result.append(next)
                index += 2
            case (.bash, UInt8(ascii: "$")), (.zsh, UInt8(ascii: "$")):
                guard byte(1) == UInt8(ascii: "'"), let (bytes, end) = dollarQuoted(word, from: index + 2) else {
                    return nil
                }
                result += bytes
                index = end
            case (.fish, UInt8(ascii: "'")):
                // fish: in single quotes only \' and \\ are escapes; any other \ stands for itself.
                index += 1
                while true {
                    guard let current = byte(0) else { return nil }
                    if current == UInt8(ascii: "'") { break }
                    if current == UInt8(ascii: "\\"), let next = byte(1),
                        next == UInt8(ascii: "'") || next == UInt8(ascii: "\\")
                    {
                        result.append(next)
                        index += 2
                    } else {
                        result.append(current)
                        index += 1
                    }
                }
                index += 1
            case (.fish, UInt8(ascii: "\\")):
                // fish: \XHH outside quotes is the byte HH.
                guard byte(1) == UInt8(ascii: "X"), let value = hexByte(word, at: index + 2) else { return nil }
                result.append(value)
                index += 4
            default:
                return nil
            }
        }
        return result
    }

    /// bash's and zsh's $'…' from `start` (after $'): \xHH, \\ and \' escapes; the bytes and the
    /// offset after the closing '.
    private static func dollarQuoted(_ word: [UInt8], from start: Int) -> ([UInt8], Int)? {
        var result: [UInt8] = []
        var index = start
        while index < word.count {
            let current = word[index]
            if current == UInt8(ascii: "'") { return (result, index + 1) }
            guard current == UInt8(ascii: "\\") else {
                result.append(current)
                index += 1
                continue
            }
            guard index + 1 < word.count else { return nil }
            switch word[index + 1] {
            case UInt8(ascii: "\\"), UInt8(ascii: "'"):
                result.append(word[index + 1])
                index += 2
            case UInt8(ascii: "x"):
                guard let value = hexByte(word, at: index + 2) else { return nil }
                result.append(value)
                index += 4
            default:
                return nil
            }
        }
        return nil
    }

    /// The byte that the two hex digits at `index` of `word` stand for, if they are two.
    private static func hexByte(_ word: [UInt8], at index: Int) -> UInt8? {
        guard index + 1 < word.count, let high = hexDigitValue(word[index]), let low = hexDigitValue(word[index + 1])
        else { return nil }
        return high << 4 | low
    }
}
