import KeychainSystem

/// The dotenv dialect of export and import: NAME="value" with \\ \" \n \r \t \$ \` escapes, so that
/// a shell that sources the file (`set -a; . ./app.env`) reads every value as text and runs nothing.
package enum DotEnv {
    /// `github-token` → `GITHUB_TOKEN`: letters and digits upper-cased, anything else `_`,
    /// and `_` before a leading digit.
    package static func variableName(for key: String) -> String {
        var name = String(
            key.unicodeScalars.map { scalar -> Character in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar))
                    ? Character(String(scalar).uppercased()) : "_"
            })
        if let first = name.first, first.isNumber { name = "_" + name }
        return name
    }

    /// `value` in double quotes, escaped scalar by scalar (a "\r\n" Character is two escapes).
    package static func quoted(_ value: String) -> String {
        var result = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "$": result += "\\$"
            case "`": result += "\\`"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// The dotenv text of `secrets`, one `NAME="value"` line each, in order: what `export` writes.
    /// - Throws: ``FormatError`` (bad data) when two keys become the same variable name.
    package static func text(of secrets: [(key: String, value: String)]) throws(FormatError) -> String {
        try variables(of: secrets).map { "\($0.name)=\(quoted($0.value))\n" }.joined()
    }

    /// Each secret with its variable name (``variableName(for:)``), in order: what every format
    /// of variables writes.
    /// - Throws: ``FormatError`` (bad data) when two keys become the same variable name.
    package static func variables(of secrets: [(key: String, value: String)]) throws(FormatError) -> [(
        name: String, key: String, value: String
    )] {
        var owners: [String: String] = [:]
        var variables: [(name: String, key: String, value: String)] = []
        for (key, value) in secrets {
            let name = variableName(for: key)
            if let owner = owners.updateValue(key, forKey: name) {
                throw FormatError(
                    "the keys \(quotedValue(owner, expected: "a key name")) and \(quotedValue(key, expected: "a key name")) "
                        + "both become \([name, key].allSatisfy { misplacedSecretKind($0) == nil } ? name : "one variable name (not shown)")"
                )
            }
            variables.append((name, key, value))
        }
        return variables
    }

    /// The (name, value) pairs of a dotenv text: `NAME=value`, `NAME="quoted"`, `NAME='literal'`,
    /// an optional `export ` before, blank lines and `#` comments.
    /// - Throws: ``FormatError`` naming `source`, the line and the reason.
    package static func parse(_ text: String, source: String) throws(FormatError) -> [(
        name: String, value: String, line: Int
    )] {
        var pairs: [(name: String, value: String, line: Int)] = []
        for (number, rawLine) in lines(of: text) {
            let location = "\(source):\(number)"
            var line = rawLine.trimming()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") { line = line.dropFirst(7).trimming() }
            guard let equals = line.firstIndex(ofScalar: "=") else {
                throw FormatError("\(location): expected NAME=value")
            }
            let name = String(line[..<equals])
            guard isVariableName(name) else {
                throw FormatError("\(location): \(quotedValue(name, expected: "a name")) is not a valid variable name")
            }
            let raw = line[line.unicodeScalars.index(after: equals)...]
            pairs.append((name, try value(raw, at: location), number))
        }
        return pairs
    }

    /// The value after `=`, read scalar by scalar: a combining mark after the opening quote
    /// belongs to the value, not to the quote. A quoted value ends at its first closing quote (not
    /// escaped, in double quotes); after it only white space may come, or a comment that starts
    /// with white space and `#`. (Before, the value ran to the line's last quote: `A="x" "y"`
    /// stored `x" "y`, and `A="x" # note` was refused as unterminated.)
    private static func value(_ raw: Substring, at location: String) throws(FormatError) -> String {
        let scalars = Array(raw.unicodeScalars)
        guard let quote = scalars.first, quote == "\"" || quote == "'" else { return String(raw) }
        var result = String.UnicodeScalarView()
        var escaped = false
        var closing: Int?
        for (index, scalar) in scalars.enumerated().dropFirst() {
            if quote == "'" || !escaped {
                if scalar == quote {
                    closing = index
                    break
                }
                if quote == "\"" && scalar == "\\" {
                    escaped = true
                } else {
                    result.append(scalar)
                }
                continue
            }
            switch scalar {
            case "n": result.append("\n")
            case "r": result.append("\r")
            case "t": result.append("\t")
            case "\\", "\"", "$", "`": result.append(scalar)
            default:
                throw FormatError(
                    "\(location): unknown escape \\\(escapedForDisplay(String(scalar))). "
                        + "Use \\\\ \\\" \\n \\r \\t \\$ or \\`")
            }
            escaped = false
        }
        guard let closing else { throw FormatError("\(location): the value's closing \(quote) is missing") }
        let rest = scalars[(closing + 1)...]
        let comment = rest.drop { $0 == " " || $0 == "\t" }
        guard comment.isEmpty || (comment.first == "#" && comment.count < rest.count) else {
            throw FormatError(
                "\(location): text follows the value's closing \(quote). Quote the whole value, or start a comment "
                    + "with a space and #")
        }
        return String(result)
    }

    /// Letters, digits and `_`, not starting with a digit: a name a shell and `env` accept.
    package static func isVariableName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return name.utf8.allSatisfy {
            $0 == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
        }
    }
}
