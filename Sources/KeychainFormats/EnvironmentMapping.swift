import KeychainSystem

/// One `NAME=KEY` or `NAME=SERVICE/KEY` mapping of `exec` (`--env`, and `--file`, whose NAME
/// is a file name).
package struct EnvironmentMapping: Sendable {
    package var name: String
    package var service: String?
    package var key: String
    /// Where it came from, for messages: "--env NAME" or "secrets.env:3".
    package var origin: String

    package init(_ text: String, origin: String, isFile: Bool = false) throws(FormatError) {
        self.origin = origin
        let text = Substring(text)
        guard let equals = text.firstIndex(ofScalar: "=") else {
            throw FormatError("\(origin): expected NAME=KEY or NAME=SERVICE/KEY", isUsageError: true)
        }
        name = String(text[..<equals])
        let target = text[text.unicodeScalars.index(after: equals)...]
        if isFile {
            guard Self.isFileName(name) else {
                throw FormatError(
                    "\(origin): \(quotedValue(name, expected: "a file name")) is not a valid credential file name. "
                        + "Use letters, digits, ., _ and -, not starting with . (at most 255)", isUsageError: true)
            }
        } else if !DotEnv.isVariableName(name) {
            throw FormatError(
                "\(origin): \(quotedValue(name, expected: "a variable name")) is not a valid environment variable "
                    + "name. Use letters, digits and _, not starting with a digit", isUsageError: true)
        }
        if let quote = target.unicodeScalars.first, quote == "\"" || quote == "'" {
            // NAME="value" is a file of values (an export in env format, a .env), not of mappings.
            throw FormatError(
                "\(origin): \(name) is given a quoted value, as in a file of values (an export in env format, a "
                    + ".env); a mapping names a secret: NAME=KEY or NAME=SERVICE/KEY. The value is not repeated "
                    + "here", isUsageError: true, kind: .valueInMapping)
        }
        if let kind = secretKind(inAnyPartOf: String(target)) {
            throw FormatError(
                "\(origin): \(name) is given \(kind), not a key; it is not repeated here. A mapping names "
                    + "a secret: NAME=KEY or NAME=SERVICE/KEY", isUsageError: true)
        }
        if let slash = target.firstIndex(ofScalar: "/") {
            service = String(target[..<slash])
            key = String(target[target.unicodeScalars.index(after: slash)...])
        } else {
            key = String(target)
        }
        guard !key.isEmpty, service?.isEmpty != true else {
            throw FormatError("\(origin): expected NAME=KEY or NAME=SERVICE/KEY", isUsageError: true)
        }
    }

    /// The mapping `TEXT` given by the caller's `option` (`--env`), named in messages as
    /// `OPTION NAME` (never with what follows =, which may be a value given by mistake).
    package init(option text: String, named option: String, isFile: Bool = false) throws(FormatError) {
        let name = text.firstIndex(of: "=").map { String(text[..<$0]) } ?? ""
        let shown = isFile ? Self.isFileName(name) && misplacedSecretKind(name) == nil : DotEnv.isVariableName(name)
        try self.init(text, origin: shown ? "\(option) \(name)" : option, isFile: isFile)
    }

    /// Whether `name` may name a file of `exec --file` (what systemd takes as a credential name,
    /// less what a shell or a listing would trip on).
    package static func isFileName(_ name: String) -> Bool {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-".utf8)
        return !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix(".") && name.utf8.allSatisfy(allowed.contains)
    }

    /// The mappings of an env file's text; `path` names it in messages.
    /// - Throws: ``FormatError`` (a usage error) naming the file and line of the first bad line.
    package static func parse(_ text: String, path: String) throws(FormatError) -> [EnvironmentMapping] {
        var mappings: [EnvironmentMapping] = []
        for (number, line) in lines(of: text) {
            let text = line.trimming()
            if text.isEmpty || text.hasPrefix("#") { continue }
            mappings.append(try EnvironmentMapping(String(text), origin: "\(path):\(number)"))
        }
        return mappings
    }
}
