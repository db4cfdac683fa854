import FoundationEssentials
import KeychainSystem

/// A password for a network resource (Locksmith's "internet password"): where it is used
/// (protocol, host, port, path) and by whom, as git's credential helpers and GNOME's network
/// clients store them. As a query, the fields left nil match any value, as git's own helpers
/// match them (credential.c `credential_match`), except that a nil `port` matches only a
/// credential without one: git sends the port as part of the host.
public struct NetworkCredential: Hashable, Sendable {
    /// `https`, `http`, `ssh`, `smtp`, …
    public var `protocol`: String
    /// The host name, without the port.
    public var host: String
    public var port: Int?
    /// The path on the host, without its leading slash (git sends one only with `useHttpPath`).
    public var path: String?
    public var username: String?
    public var password: String?
    /// When the password stops being valid (an OAuth access token); an expired password is not returned.
    public var passwordExpiry: Date?
    /// The OAuth refresh token that comes with an access token, if any.
    public var oauthRefreshToken: String?

    public init(
        protocol: String, host: String, port: Int? = nil, path: String? = nil, username: String? = nil,
        password: String? = nil, passwordExpiry: Date? = nil, oauthRefreshToken: String? = nil
    ) {
        self.protocol = `protocol`
        self.host = host
        self.port = port
        self.path = path
        self.username = username
        self.password = password
        self.passwordExpiry = passwordExpiry
        self.oauthRefreshToken = oauthRefreshToken
    }

    /// Whether the password has expired at `now`.
    public func isExpired(at now: Date = Date()) -> Bool { passwordExpiry.map { $0 <= now } ?? false }

    /// Whether this stored credential answers `query`: same protocol, host and port, and the
    /// query's path and username when it names them (git sends the path only with
    /// `credential.useHttpPath`); with `password`, also the query's password when it names one
    /// (an erase after git rejected a password removes only a credential with that password).
    public func matches(_ query: NetworkCredential, password matchingPassword: Bool = false) -> Bool {
        `protocol` == query.protocol && host == query.host && port == query.port
            && (query.path == nil || path == query.path) && (query.username == nil || username == query.username)
            && (!matchingPassword || query.password == nil || password == query.password)
    }

    /// Whether this credential's path is the query's (both none, or the same): such a credential
    /// is preferred to one that answers only because the query names no path.
    public func hasPath(of query: NetworkCredential) -> Bool { path == query.path }

    /// Where the credential is used, as a URL without the password: `https://user@host:8443/path`.
    /// The user name is percent-encoded where it holds `@`, `:`, `/`, `%` or a control character,
    /// the host where it holds `@`, `/`, `%` or a control character, and its last `:` when what
    /// follows would read as a port (a host `h:9`, from a URL's `h%3A9`) (and the protocol where it
    /// holds `:`, `/`, `@` or `%`, which no real one does), so that it reads back as itself.
    public var location: String {
        var text = Self.percentEncoded(`protocol`, reserved: ":/@%") + "://"
        if let username { text += Self.percentEncoded(username, reserved: "@:/%") + "@" }
        var encodedHost = Self.percentEncoded(host, reserved: "@/%")
        if Self.splitPort(encodedHost).1 != nil, let colon = encodedHost.unicodeScalars.lastIndex(of: ":") {
            encodedHost.unicodeScalars.replaceSubrange(colon...colon, with: "%3A".unicodeScalars)
        }
        text += encodedHost
        if let port { text += ":\(port)" }
        if let path, !path.isEmpty { text += "/" + path }
        return text
    }

    /// The credential whose ``location`` is `location` (without a password), or nil. Read scalar by
    /// scalar: a combining mark after `://`, `@` or `:` (a host or name may begin with one) joins
    /// that delimiter into one Character, which a search by Characters would not find.
    public init?(location: String) {
        let scalars = Array(location.unicodeScalars)
        func text(_ range: Range<Int>) -> Substring { Substring(String(String.UnicodeScalarView(scalars[range]))) }
        guard scalars.count >= 4,
            let separator = (1..<scalars.count - 2).first(where: {
                scalars[$0] == ":" && scalars[$0 + 1] == "/" && scalars[$0 + 2] == "/"
            }),
            let scheme = percentDecoded(text(0..<separator))
        else { return nil }
        var rest = (separator + 3)..<scalars.count
        var path: String?
        if let slash = rest.first(where: { scalars[$0] == "/" }) {
            path = String(text((slash + 1)..<rest.upperBound))
            rest = rest.lowerBound..<slash
        }
        var username: String?
        if let at = rest.last(where: { scalars[$0] == "@" }) {
            guard let decoded = percentDecoded(text(rest.lowerBound..<at)) else { return nil }
            username = decoded
            rest = (at + 1)..<rest.upperBound
        }
        // The host may be empty: git's client certificates (cert:///path/to/cert.p12).
        let (encodedHost, port) = Self.splitPort(String(text(rest)))
        guard let host = percentDecoded(Substring(encodedHost)) else { return nil }
        self.init(protocol: scheme, host: host, port: port, path: path, username: username)
    }

    /// `host:port` split at a final `:digits` that is not inside an IPv6 address's brackets (by
    /// scalars, as ``init(location:)`` reads).
    static func splitPort(_ hostAndPort: String) -> (String, Int?) {
        let scalars = hostAndPort.unicodeScalars
        guard let colon = scalars.lastIndex(of: ":"), !scalars[colon...].contains("]") else {
            return (hostAndPort, nil)
        }
        let digits = scalars[scalars.index(after: colon)...]
        guard !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }),
            let port = Int(String(String.UnicodeScalarView(digits))), (0...65535).contains(port)
        else { return (hostAndPort, nil) }
        return (String(String.UnicodeScalarView(scalars[..<colon])), port)
    }

    /// `text` with `reserved` and control characters percent-encoded.
    private static func percentEncoded(_ text: String, reserved: String) -> String {
        KeychainSystem.percentEncoded(text) { $0 < 0x20 || $0 == 0x7f || reserved.utf8.contains($0) }
    }

    // MARK: The stored secret

    /// The secret as stored: the password, then `password_expiry_utc=…` and
    /// `oauth_refresh_token=…` lines when there are such (upstream git-credential-libsecret's format).
    public var storedSecret: String {
        var text = password ?? ""
        if let passwordExpiry { text += "\npassword_expiry_utc=\(Int64(passwordExpiry.timeIntervalSince1970))" }
        if let oauthRefreshToken { text += "\noauth_refresh_token=\(oauthRefreshToken)" }
        return text
    }

    /// Sets the password, expiry and refresh token from a ``storedSecret``.
    public mutating func readStoredSecret(_ text: String) {
        // Split scalar by scalar: "\r\n" is one Character, which a split at "\n" would not cut.
        var lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map {
            Substring(String(String.UnicodeScalarView($0)))
        }
        password = lines.isEmpty ? "" : String(lines.removeFirst())
        for line in lines {
            if let value = line.value(after: "password_expiry_utc="), let seconds = Int64(value) {
                passwordExpiry = Date(timeIntervalSince1970: Double(seconds))
            } else if let value = line.value(after: "oauth_refresh_token=") {
                oauthRefreshToken = String(value)
            }
        }
    }
}

extension Substring {
    fileprivate func value(after prefix: String) -> Substring? { hasPrefix(prefix) ? dropFirst(prefix.count) : nil }
}
