import KeychainSystem

/// One variable of `exec` and `env`: a `NAME=KEY` or `NAME=SERVICE/KEY` mapping (`--env`, an
/// env file of mappings, and `--file`, whose NAME is a file name), a `NAME=keychain://…`
/// reference, or, in a .env file, a literal `NAME=value`.
package struct EnvironmentMapping: Sendable {
    package var name: String
    package var value: Value
    /// Where it came from, for messages: "--env NAME" or "secrets.env:3".
    package var origin: String

    package enum Value: Sendable {
        /// A secret by key, in `service` or (nil) the default service.
        case mapping(service: String?, key: String)
        case reference(KeychainReference)
        /// A value given as it is (a .env line): passed on unchanged, and not masked.
        case literal(String)
    }

    /// The secret this variable is read from (none for a literal), `defaultService` where a
    /// mapping names none.
    package func reference(defaultService: String) -> KeychainReference? {
        switch value {
        case .mapping(let service, let key): KeychainReference(service: service ?? defaultService, key: key)
        case .reference(let reference): reference
        case .literal: nil
        }
    }

    package init(name: String, value: Value, origin: String) {
        self.name = name
        self.value = value
        self.origin = origin
    }

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
        if KeychainReference.isReference(target) {
            do {
                value = .reference(try KeychainReference(parsing: target))
            } catch {
                throw Self.malformed(error, at: origin)
            }
            return
        }
        if let kind = secretKind(inAnyPartOf: String(target)) {
            throw FormatError(
                "\(origin): \(name) is given \(kind), not a key; it is not repeated here. A mapping names "
                    + "a secret: NAME=KEY or NAME=SERVICE/KEY", isUsageError: true)
        }
        var service: String?
        var key = String(target)
        if let slash = target.firstIndex(ofScalar: "/") {
            service = String(target[..<slash])
            key = String(target[target.unicodeScalars.index(after: slash)...])
        }
        guard !key.isEmpty, service?.isEmpty != true else {
            throw FormatError("\(origin): expected NAME=KEY or NAME=SERVICE/KEY", isUsageError: true)
        }
        value = .mapping(service: service, key: key)
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

    /// The variables of an env file's text; `path` names it in messages. A file with a
    /// `keychain://` value or a quoted value is a .env file (``DotEnv/parse(_:source:)``): each value
    /// that is a reference as a whole is read from the keychain, every other is a literal. A file
    /// with neither is a file of mappings (`NAME=KEY`, `NAME=SERVICE/KEY`), as env files were.
    /// - Throws: ``FormatError`` (a usage error) naming the file and line of the first bad line.
    package static func parse(_ text: String, path: String) throws(FormatError) -> [EnvironmentMapping] {
        if isDotEnv(text) {
            let pairs: [(name: String, value: String, line: Int)]
            do {
                pairs = try DotEnv.parse(text, source: path)
            } catch {
                throw FormatError(error.description, isUsageError: true)
            }
            return try pairs.map { pair throws(FormatError) in
                let origin = "\(path):\(pair.line)"
                guard KeychainReference.isReference(pair.value) else {
                    return EnvironmentMapping(name: pair.name, value: .literal(pair.value), origin: origin)
                }
                do throws(FormatError) {
                    return EnvironmentMapping(
                        name: pair.name, value: .reference(try KeychainReference(parsing: pair.value)), origin: origin)
                } catch {
                    throw Self.malformed(error, at: origin)
                }
            }
        }
        var mappings: [EnvironmentMapping] = []
        for (number, line) in lines(of: text) {
            let text = line.trimming()
            if text.isEmpty || text.hasPrefix("#") { continue }
            mappings.append(try EnvironmentMapping(String(text), origin: "\(path):\(number)"))
        }
        return mappings
    }

    /// A malformed reference at `origin`, in the words every reader of references uses.
    /// `outcome` says what it stopped ("nothing was run"), after the reason.
    package static func malformed(_ error: FormatError, at origin: String, outcome: String? = nil) -> FormatError {
        FormatError(
            "\(origin): the reference \(error.description)\(outcome.map { "; \($0)" } ?? ""). Write "
                + "keychain://SERVICE/KEY, with %XX for a % ? # (and a / in the service)", isUsageError: true)
    }

    /// Whether an env file's `text` is a .env file: a line's value is quoted or a reference, or a
    /// line starts with `export `.
    static func isDotEnv(_ text: String) -> Bool {
        lines(of: text).contains { _, line in
            var line = line.trimming()
            if line.hasPrefix("export ") { return true }
            guard !line.hasPrefix("#"), let equals = line.firstIndex(ofScalar: "=") else { return false }
            line = line[line.unicodeScalars.index(after: equals)...]
            return line.hasPrefix("\"") || line.hasPrefix("'") || KeychainReference.isReference(line)
        }
    }
}
