// A secret given where a path belongs is the usual CI mistake: `KEYCHAIN_IDENTITY="$(cat key)"`
// (a "variable" secret instead of a "file" one), `--passphrase-file "$PASSPHRASE"`. A message that
// repeats the value as a path would print the secret, over several raw lines that CI log masking
// cannot hide. Every message that names a path given by the user shows it with ``quotedPath(_:)``.

/// What `value`, given where a path belongs, looks like when it cannot be a path but may well be a
/// secret: "an OpenSSH private key", "an age secret key", "several lines", …; nil for a plausible
/// path. Judged by shape only: a passphrase that reads like a file name is not caught.
public func misplacedSecretKind(_ value: String) -> String? {
    if let key = privateKeyKind(value) { return key }
    if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) { return "several lines" }
    if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "control characters" }
    if value.utf8.count > 4096 { return "more bytes than any path (4096)" }
    if let first = value.unicodeScalars.first, let last = value.unicodeScalars.last,
        first.properties.isWhitespace || last.properties.isWhitespace
    {
        return "a value with leading or trailing space"
    }
    if isJSONWebToken(value) { return "a JSON web token" }
    if isUUID(value) { return "an id (a UUID)" }
    if isServerToken(value) { return "an OpenBao or Vault token" }
    if let service = serviceTokenKind(value) { return service }
    return nil
}

/// ``misplacedSecretKind(_:)`` of `value`, of any of its parts between `/`, `=`, `:`, `@` and
/// spaces, or of what follows one of those: for names built of parts (`SERVICE/KEY`, `keychain://SERVICE/KEY`, `--x=VALUE`),
/// where a UUID or an OpenBao token is one part. Not for paths, whose parts may well be UUIDs.
public func secretKind(inAnyPartOf value: String) -> String? {
    if let kind = misplacedSecretKind(value) { return kind }
    let separators: Set<Character> = ["/", "=", ":", "@", " "]
    if let kind = value.split(whereSeparator: { separators.contains($0) }).lazy.compactMap({
        misplacedSecretKind(String($0))
    }).first {
        return kind
    }
    // And what follows each separator, whole: an AWS secret key holds / itself.
    return value.indices.lazy.filter { separators.contains(value[$0]) }.compactMap {
        misplacedSecretKind(String(value[value.index(after: $0)...]))
    }.first
}

/// What private key `value` holds, anywhere in it: "an OpenSSH private key", "a PEM private key or
/// certificate" (a `-----BEGIN` block), "an age secret key"; nil when it holds none.
public func privateKeyKind(_ value: String) -> String? {
    let upper = value.uppercased()
    if upper.contains("-----BEGIN") || upper.contains("PRIVATE KEY-----") {
        return upper.contains("OPENSSH PRIVATE KEY") ? "an OpenSSH private key" : "a PEM private key or certificate"
    }
    if upper.contains("AGE-SECRET-KEY-") || upper.contains("AGE-PLUGIN-") { return "an age secret key" }
    return nil
}

/// `path` for a message: in single quotes, escaped as ``escapedForDisplay(_:)`` escapes names, or,
/// when it looks like a secret (``misplacedSecretKind(_:)``), only what it looks like.
public func quotedPath(_ path: String) -> String { quotedValue(path, expected: "a path") }

/// `value`, given where `expected` belongs ("a number"), for a message: as ``quotedPath(_:)``.
public func quotedValue(_ value: String, expected: String) -> String {
    if let kind = misplacedSecretKind(value) { return "(a value that is not shown: \(kind), not \(expected))" }
    return "'\(escapedForDisplay(value))'"
}

/// The well-known prefixes of services' API tokens (GitHub, GitLab, Slack, npm, PyPI, Stripe,
/// OpenAI, Anthropic, Google, AWS access key ids), each followed by at least 16 token characters.
private let serviceTokenPrefixes: [(prefix: String, kind: String)] =
    ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"].map { ($0, "a GitHub token") }
    + ["glpat-", "glrt-", "gldt-", "glptt-", "glcbt-", "glsoat-", "glft-", "glimt-", "glagent-", "gloas-"].map {
        ($0, "a GitLab token")
    }
    + ["xoxb-", "xoxp-", "xoxa-", "xoxs-", "xoxr-", "xoxe-", "xoxe.xoxp-", "xapp-"].map { ($0, "a Slack token") }
    + [
        ("hooks.slack.com/services/", "a Slack webhook"), ("npm_", "an npm token"), ("pypi-", "a PyPI token"),
        ("sk_live_", "a Stripe key"), ("rk_live_", "a Stripe key"), ("sk_test_", "a Stripe key"),
        ("sk-ant-", "an Anthropic key"), ("sk-proj-", "an OpenAI key"), ("AIza", "a Google API key"),
        ("AKIA", "an AWS access key id"), ("ASIA", "an AWS access key id"),
    ]

/// What service token `value` holds anywhere in it (`Bearer ghp_…`, `https://u:ghp_…@host`,
/// `app/ghp_…`): a well-known prefix at the start of a word, followed by at least 16 token
/// characters; or, the whole value, 40 characters shaped as an AWS secret access key.
private func serviceTokenKind(_ value: String) -> String? {
    let bytes = Array(value.utf8)
    for (prefix, kind) in serviceTokenPrefixes {
        let prefixBytes = Array(prefix.utf8)
        var index = 0
        while index + prefixBytes.count <= bytes.count {
            defer { index += 1 }
            guard bytes[index] == prefixBytes[0], bytes[index..<(index + prefixBytes.count)].elementsEqual(prefixBytes),
                index == 0 || !isAlphanumeric(bytes[index - 1])
            else { continue }
            let rest = bytes[(index + prefixBytes.count)...].prefix { isBase64URL($0) || $0 == UInt8(ascii: "/") }
            if rest.count >= 16 { return kind }
        }
    }
    return isAWSSecretKey(bytes) ? "an AWS secret access key" : nil
}

/// 40 characters of base64 (`+` and `/` too), with upper and lower case letters and digits.
private func isAWSSecretKey(_ bytes: [UInt8]) -> Bool {
    guard bytes.count == 40,
        bytes.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") })
    else { return false }
    return bytes.contains(where: { (0x41...0x5A).contains($0) })
        && bytes.contains(where: { (0x61...0x7A).contains($0) })
        && bytes.contains(where: { (0x30...0x39).contains($0) })
}

/// `header.payload.signature`, each base64url, the header starting `eyJ` (`{"`).
private func isJSONWebToken(_ value: String) -> Bool {
    let parts = value.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    return parts.count == 3 && value.hasPrefix("eyJ") && parts.allSatisfy { $0.allSatisfy(isBase64URL) }
}

/// 8-4-4-4-12 hexadecimal digits: an AppRole secret id or role id.
private func isUUID(_ value: String) -> Bool {
    let parts = value.utf8.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
    return parts.map(\.count) == [8, 4, 4, 4, 12] && parts.allSatisfy { $0.allSatisfy(isHexDigit) }
}

/// `hvs.…`, `hvb.…`, `hvr.…`, `s.…`, `b.…`, `r.…` with at least 20 base64url characters after the dot.
private func isServerToken(_ value: String) -> Bool {
    guard let dot = value.utf8.firstIndex(of: UInt8(ascii: ".")) else { return false }
    let prefix = String(decoding: value.utf8[..<dot], as: UTF8.self)
    let rest = value.utf8[value.utf8.index(after: dot)...]
    return ["hvs", "hvb", "hvr", "s", "b", "r"].contains(prefix) && rest.count >= 20 && rest.allSatisfy(isBase64URL)
}

private func isBase64URL(_ byte: UInt8) -> Bool {
    isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "=")
}

private func isHexDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
}

private func isAlphanumeric(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
        || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
}
