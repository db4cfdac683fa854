import FoundationEssentials
import KeychainStore
import KeychainSystem

/// Where the OpenBao (or HashiCorp Vault) server is and how to log in, read from the environment
/// the way the `bao` and `vault` CLIs read it: each `BAO_*` variable falls back to its `VAULT_*` twin.
public struct OpenBaoConfiguration: Sendable {
    /// How the store gets its token.
    public enum Credentials: Sendable {
        /// A token given outright (`BAO_TOKEN`), or read from `~/.vault-token`; `source` names where from.
        case token(String, source: String)
        /// AppRole login (`POST /v1/auth/MOUNT/login`) on the first request; the token it returns
        /// is kept in memory only.
        case appRole(roleID: String, secretID: String, mount: String)
        /// JWT login (`POST /v1/auth/MOUNT/login` with `jwt` and `role`): a CI job's own identity
        /// token (GitLab's id_tokens, GitHub's OIDC token) instead of a static secret; the token
        /// it returns is kept in memory only. Without `role`, the mount's default role.
        case jwt(String, role: String?, mount: String)
        /// None found; requests fail with a message that says where a token can come from.
        case none
    }

    /// The server's base URL without a trailing slash, e.g. `https://bao.internal:8200`.
    public var address: String
    /// ``address`` as messages show it (``redacted(_:)``).
    public var shownAddress: String { Self.redacted(address) }
    /// The KV version 2 mount holding the services (`KEYCHAIN_OPENBAO_MOUNT`, default `secret`).
    public var mount: String
    /// `BAO_NAMESPACE`, sent as `X-Vault-Namespace`.
    public var namespace: String?
    public var credentials: Credentials
    /// `BAO_CACERT` (a PEM file) and `BAO_CAPATH` (a directory of them) for a private CA.
    public var caFile: String?
    public var caPath: String?

    /// The bao CLI's default address.
    public static let defaultAddress = "https://127.0.0.1:8200"

    public init(
        address: String, mount: String = "secret", namespace: String? = nil, credentials: Credentials,
        caFile: String? = nil, caPath: String? = nil
    ) throws(KeychainError) {
        self.address = try Self.checkedAddress(address)
        self.mount = try Self.checkedMount(mount)
        self.namespace = namespace
        self.credentials = credentials
        self.caFile = caFile
        self.caPath = caPath
    }

    /// The configuration `environment` describes (docs/backends/openbao.md).
    /// - Parameter readFile: reads a token, role id, secret id or JWT file; nil when it does not exist.
    /// - Throws: ``KeychainError/badConfiguration(detail:)`` for an address that cannot be used,
    ///   an AppRole half given, or a file that cannot be read.
    public static func fromEnvironment(
        _ environment: [String: String], readFile: (String) throws(KeychainError) -> String? = readSmallFile
    ) throws(KeychainError) -> OpenBaoConfiguration {
        func value(_ name: String) -> String? {
            (environment["BAO_" + name] ?? environment["VAULT_" + name]).flatMap { $0.isEmpty ? nil : $0 }
        }
        func own(_ name: String) -> String? {
            environment["KEYCHAIN_OPENBAO_" + name].flatMap { $0.isEmpty ? nil : $0 }
        }
        func fromValueOrFile(_ name: String, _ setting: OpenBaoSetting) throws(KeychainError) -> String? {
            if let text = own(name) { return text }
            guard let path = own(name + "_FILE") else { return nil }
            guard let text = try readFile(path) else {
                if let kind = misplacedSecretKind(path) { throw .openBao(.settingFileHoldsSecret(setting, kind: kind)) }
                throw .openBao(.settingFileMissing(setting, path: path))
            }
            return text.trimmingLineEnds
        }
        var credentials = Credentials.none
        let roleID = try fromValueOrFile("ROLE_ID", .roleID)
        let secretID = try fromValueOrFile("SECRET_ID", .secretID)
        if let token = value("TOKEN") {
            credentials = .token(token, source: environment["BAO_TOKEN"] != nil ? "$BAO_TOKEN" : "$VAULT_TOKEN")
        } else if roleID != nil || secretID != nil {
            guard let roleID, let secretID else { throw .openBao(.halfAnAppRole) }
            credentials = .appRole(roleID: roleID, secretID: secretID, mount: own("APPROLE_MOUNT") ?? "approle")
        } else if let jwt = try fromValueOrFile("JWT", .jwt) {
            credentials = .jwt(jwt, role: own("JWT_ROLE"), mount: own("JWT_MOUNT") ?? "jwt")
        } else if let home = environment["HOME"], !home.isEmpty,
            let token = try readFile(home + "/.vault-token")?.trimmingLineEnds, !token.isEmpty
        {
            credentials = .token(token, source: "~/.vault-token")
        }
        return try OpenBaoConfiguration(
            address: value("ADDR") ?? defaultAddress, mount: own("MOUNT") ?? "secret",
            namespace: value("NAMESPACE"), credentials: credentials, caFile: value("CACERT"),
            caPath: value("CAPATH"))
    }

    /// The host of `address` is a loopback one (127.0.0.0/8, ::1, localhost).
    var isLoopback: Bool { Self.isLoopbackHost(Self.host(of: address)) }

    /// `address` as a message may show it: a password in its user part written `xxxxx` (as Go's
    /// URL.Redacted writes it), and without a query or fragment; any of these may hold a secret.
    static func redacted(_ address: String) -> String {
        var shown = String(address.prefix { $0 != "?" && $0 != "#" })
        if let authority = authority(of: shown), let at = authority.lastIndex(of: "@"),
            let colon = authority[..<at].firstIndex(of: ":")
        {
            shown.replaceSubrange(shown.index(after: colon)..<at, with: "xxxxx")
        }
        return escapedForDisplay(shown)
    }

    static func checkedAddress(_ address: String) throws(KeychainError) -> String {
        var address = address
        while address.hasSuffix("/") { address.removeLast() }
        let lowered = address.lowercased()
        let isHTTP = lowered.hasPrefix("http://")
        if address.contains(where: { $0 == "?" || $0 == "#" }) {
            throw .badConfiguration(
                detail: "the OpenBao address '\(redacted(address))…' has a query or fragment (what follows ? or #, "
                    + "not repeated here). Set BAO_ADDR to the server's URL alone, e.g. https://bao.example.com:8200")
        }
        guard isHTTP || lowered.hasPrefix("https://"), !host(of: address).isEmpty, !address.contains(" ") else {
            throw .badConfiguration(
                detail: "the OpenBao address '\(redacted(address))' is not an http(s) URL. "
                    + "Set BAO_ADDR to one, e.g. https://bao.example.com:8200")
        }
        if isHTTP && !isLoopbackHost(host(of: address)) {
            throw .badConfiguration(
                detail: "the OpenBao address '\(redacted(address))' is plain http to another machine, "
                    + "which would send the token and secrets unencrypted. Use https:// (with BAO_CACERT for "
                    + "a private CA); plain http is allowed only to loopback addresses")
        }
        return address
    }

    static func checkedMount(_ mount: String) throws(KeychainError) -> String {
        let trimmed = mount.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        guard !trimmed.isEmpty, (try? kvPath(trimmed)) != nil else {
            throw .openBao(.mountNotAPath(mount: mount))
        }
        return trimmed
    }

    /// The host part of an http(s) URL, without brackets or port.
    static func host(of address: String) -> String {
        guard var authority = authority(of: address) else { return "" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") { return String(authority.dropFirst().prefix { $0 != "]" }) }
        return String(authority.prefix { $0 != ":" })
    }

    /// What follows `scheme://` up to the path: user part, host and port; nil without a scheme.
    private static func authority(of address: String) -> Substring? {
        guard let schemeEnd = address.firstRange(of: "://") else { return nil }
        return address[schemeEnd.upperBound...].prefix { $0 != "/" }
    }

    static func isLoopbackHost(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

/// A path of a KV mount for a service name: each `/`-separated segment percent-encoded.
/// - Throws: ``KeychainError/invalidName(kind:reason:)`` for an empty, `.` or `..` segment, which
///   KV paths cannot hold.
func kvPath(_ name: String) throws(KeychainError) -> String {
    let segments = name.split(separator: "/", omittingEmptySubsequences: false)
    guard segments.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
        throw .invalidName(
            kind: "service name for OpenBao",
            reason: "'\(escapedForDisplay(name))' has an empty, '.' or '..' path segment, which a KV path "
                + "cannot hold")
    }
    // OpenBao answers 400 to a path with any other character (Go's unicode.IsPrint, measured).
    if let refused = name.unicodeScalars.first(where: { !isPrintableInPath($0) }) {
        throw .invalidName(
            kind: "service name for OpenBao",
            reason: "'\(escapedForDisplay(name))' holds U+\(String(refused.value, radix: 16, uppercase: true)), a "
                + "control, format, separator or unassigned character, which OpenBao refuses in a path")
    }
    return segments.map { percentEncoded(String($0)) { !isUnreservedInURL($0) } }.joined(separator: "/")
}

/// A letter, mark, number, punctuation or symbol, or the ASCII space: what OpenBao takes in a path.
private func isPrintableInPath(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .nonspacingMark,
        .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber, .connectorPunctuation,
        .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation, .finalPunctuation,
        .otherPunctuation, .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
        return true
    default:
        return scalar == " "
    }
}

extension String {
    /// Without spaces, tabs and line ends around it (a token file written by `echo`, or on Windows).
    fileprivate var trimmingLineEnds: String {
        String(trimming { isSpaceOrTab($0) || $0 == "\n" || $0 == "\r" })
    }
}

/// Reads a small text file (a token, a role id); nil when it does not exist.
public func readSmallFile(_ path: String) throws(KeychainError) -> String? {
    do {
        return try readFileIfPresent(path, limit: 64 * 1024).map { String(decoding: $0, as: UTF8.self) }
    } catch {
        throw .badConfiguration(detail: "\(error). Check the file and its permissions")
    }
}
