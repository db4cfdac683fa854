import FoundationEssentials

/// git's credential helper protocol (git-credential(1)): `key=value` lines up to a blank line.
public enum GitCredentialMessage {
    /// The credential a message from git describes; nil without a protocol and a host (git sends
    /// both for every request; the host is empty for a client certificate's passphrase, protocol
    /// `cert` with the certificate's file as the path). Lines end in LF or CRLF, as git reads them
    /// (strbuf_getline). Unknown keys, `capability[]` and `wwwauth[]` lines, and lines without `=`
    /// are ignored, as the protocol asks; a `url=` is split into its parts.
    public static func parse(_ bytes: [UInt8]) -> NetworkCredential? {
        var fields: [String: String] = [:]
        for var line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { break }
            guard let equals = line.firstIndex(of: UInt8(ascii: "=")), !line.contains(0) else { continue }
            fields[String(decoding: line[..<equals], as: UTF8.self)] = String(
                decoding: line[line.index(after: equals)...], as: UTF8.self)
        }
        var credential: NetworkCredential?
        if let url = fields["url"] { credential = NetworkCredential(location: url) }
        if let scheme = fields["protocol"], !scheme.isEmpty, let host = fields["host"] {
            let (name, port) = NetworkCredential.splitPort(host)
            credential = NetworkCredential(protocol: scheme, host: name, port: port)
        }
        guard var credential else { return nil }
        if let path = fields["path"] { credential.path = path.isEmpty ? nil : path }
        if let username = fields["username"] { credential.username = username }
        if let password = fields["password"] { credential.password = password }
        if let expiry = fields["password_expiry_utc"].flatMap({ Int64($0) }) {
            credential.passwordExpiry = Date(timeIntervalSince1970: Double(expiry))
        }
        if let token = fields["oauth_refresh_token"] { credential.oauthRefreshToken = token }
        return credential
    }

    /// The lines a helper's `get` answers with: protocol, host (with the port), path, username,
    /// password, and the expiry and refresh token when known.
    public static func format(_ credential: NetworkCredential) -> String {
        var lines = [
            "protocol=\(credential.protocol)", "host=\(credential.host)" + (credential.port.map { ":\($0)" } ?? ""),
        ]
        if let path = credential.path { lines.append("path=\(path)") }
        if let username = credential.username { lines.append("username=\(username)") }
        if let password = credential.password { lines.append("password=\(password)") }
        if let expiry = credential.passwordExpiry {
            lines.append("password_expiry_utc=\(Int64(expiry.timeIntervalSince1970))")
        }
        if let token = credential.oauthRefreshToken { lines.append("oauth_refresh_token=\(token)") }
        return lines.map { $0 + "\n" }.joined()
    }
}
