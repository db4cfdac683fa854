import FoundationEssentials

/// An OpenSSH allowed_signers file (`man ssh-keygen`, ALLOWED SIGNERS): which principals may sign
/// with which key, in which namespaces and when. Each line is `principals [options] keytype
/// base64key [comment]`; '#' lines and blank lines are comments. What we do not understand (an
/// unknown option) is refused rather than ignored; certificates (cert-authority) are not supported.
package struct AllowedSigners: Sendable {
    /// One line: its principal patterns, key and restrictions.
    struct Entry: Sendable {
        let line: Int
        /// The principals field's patterns, as written ("!" patterns included).
        let principals: [String]
        let key: SSHPublicKey
        /// The namespaces pattern-list, or nil: any namespace.
        let namespaces: String?
        let validAfter: Date?
        let validBefore: Date?
    }

    let entries: [Entry]

    /// The file's entries; a message names the line: "line 3: …".
    package init(_ text: String) throws(SSHKeyError) {
        var entries: [Entry] = []
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            do {
                entries.append(try Self.entry(String(trimmed), line: index + 1))
            } catch {
                switch error {
                case .malformed(let what): throw .malformed("line \(index + 1): \(what)")
                case .unsupported(let what): throw .unsupported("line \(index + 1): \(what)")
                default: throw error
                }
            }
        }
        self.entries = entries
    }

    /// The principals allowed to sign as `key` in `namespace` at `date` (empty: not allowed):
    /// the principal patterns of every line for that key whose options allow the namespace and
    /// the date, in the file's order, once each (negated "!" patterns left out).
    package func principals(for key: SSHPublicKey, namespace: String, at date: Date) -> [String] {
        var found: [String] = []
        for entry in entries where entry.key == key {
            if let namespaces = entry.namespaces, SSHPatterns.matchList(namespace, namespaces) != .match { continue }
            if let after = entry.validAfter, date < after { continue }
            if let before = entry.validBefore, date > before { continue }
            for principal in entry.principals where !principal.hasPrefix("!") && !found.contains(principal) {
                found.append(principal)
            }
        }
        return found
    }

    /// Whether a line names `key` at all, whatever its namespaces and dates.
    package func lists(_ key: SSHPublicKey) -> Bool { entries.contains { $0.key == key } }

    /// Whether `identity` matches a principals pattern-list (ssh-keygen -Y verify's -I check:
    /// '*' and '?' wildcards, a matching "!" pattern refuses).
    package static func principal(_ identity: String, matches principals: [String]) -> Bool {
        SSHPatterns.matchList(identity, principals.joined(separator: ",")) == .match
    }

    /// The entry of one non-comment line.
    private static func entry(_ line: String, line number: Int) throws(SSHKeyError) -> Entry {
        let tokens = AllowedSignersSyntax.tokens(line)
        guard tokens.count >= 3 else { throw .malformed("expected \"principals [options] keytype base64key\"") }
        let principals = try AllowedSignersSyntax.unquoted(tokens[0]).split(separator: ",").map(String.init)
        guard !principals.isEmpty, !principals.contains(where: \.isEmpty) else {
            throw .malformed("the principals field has an empty principal")
        }
        var options = AllowedSignersSyntax.Options()
        let key: SSHPublicKey
        if let bare = try? SSHPublicKey(line: tokens[1] + " " + tokens[2]) {
            key = bare
        } else if tokens[1].contains("=") || tokens[1].lowercased() == "cert-authority"
            || (tokens.count >= 4 && (try? SSHPublicKey(line: tokens[2] + " " + tokens[3])) != nil)
        {
            options = try AllowedSignersSyntax.options(tokens[1])
            guard tokens.count >= 4 else { throw .malformed("expected a key after the options") }
            key = try SSHPublicKey(line: tokens[2] + " " + tokens[3])
        } else {
            key = try SSHPublicKey(line: tokens[1] + " " + tokens[2])
        }
        return Entry(
            line: number, principals: principals, key: key, namespaces: options.namespaces,
            validAfter: options.validAfter, validBefore: options.validBefore)
    }
}
