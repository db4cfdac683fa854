import Foundation
import KeychainCore
import Testing

@Suite("NetworkCredential: locations, git's message format, keyed storage")
struct NetworkCredentialTests {
    @Test(arguments: [
        NetworkCredential(protocol: "https", host: "github.com"),
        NetworkCredential(protocol: "https", host: "github.com", username: "octo"),
        NetworkCredential(protocol: "http", host: "[::1]", port: 8080, path: "team/repo.git", username: "me@corp:x/y%"),
        NetworkCredential(protocol: "smtp", host: "mail.example", port: 587, username: "ünï cödé"),
        // A host ending in what reads as a port (the fuzzer's `url=tsp://us:0%39` decodes to it).
        NetworkCredential(protocol: "tsp", host: "us:09"), NetworkCredential(protocol: "x", host: "h:1", port: 2),
        // A combining mark (U+030A) after `://`, `@` and a host's `:` joins each delimiter into
        // one Character (the fuzzer's host `\u{30A}jo@04c%[p…]:8080`).
        NetworkCredential(protocol: "https", host: "\u{30A}h", port: 8080, username: "u"),
        NetworkCredential(protocol: "https", host: "\u{30A}jo@04c%[p\u{7F}:1ox]:808p::2/x]", port: 8080),
        NetworkCredential(protocol: "https", host: "h:\u{30A}1", path: "\u{30A}p", username: "\u{30A}u"),
        NetworkCredential(protocol: "x", host: "h:1\u{30A}"),
    ])
    func locationRoundTrips(_ credential: NetworkCredential) throws {
        let parsed = try #require(NetworkCredential(location: credential.location))
        #expect(parsed == credential, "\(credential.location)")
    }

    @Test func locationEncodesOnlyWhatWouldBreakIt() {
        let credential = NetworkCredential(protocol: "https", host: "h", port: 1, path: "p", username: "a@b:c/d%e\n")
        #expect(credential.location == "https://a%40b%3Ac%2Fd%25e%0A@h:1/p")
        #expect(NetworkCredential(protocol: "tsp", host: "us:09").location == "tsp://us%3A09")
        #expect(NetworkCredential(protocol: "x", host: "a:b").location == "x://a:b")
        #expect(NetworkCredential(location: "no-scheme") == nil)
        // An empty host is git's client certificate (cert:///path/to/cert.p12), not a mistake.
        #expect(
            NetworkCredential(location: "https://user@")
                == NetworkCredential(protocol: "https", host: "", username: "user"))
        #expect(
            NetworkCredential(location: "cert:///home/me/cert.p12")
                == NetworkCredential(protocol: "cert", host: "", path: "home/me/cert.p12"))
        #expect(NetworkCredential(location: "https://%zz@host") == nil)
    }

    @Test func gitMessagesParseAndFormat() throws {
        let message = Array(
            """
            capability[]=authtype
            protocol=https
            host=example.com:8443
            path=a/b.git
            username=bob
            password=p=w
            password_expiry_utc=2000000000
            oauth_refresh_token=r
            wwwauth[]=Basic realm="x"
            something-new=1

            protocol=ignored-after-the-blank-line
            """.utf8)
        let credential = try #require(GitCredentialMessage.parse(message))
        #expect(
            credential
                == NetworkCredential(
                    protocol: "https", host: "example.com", port: 8443, path: "a/b.git", username: "bob",
                    password: "p=w",
                    passwordExpiry: Date(timeIntervalSince1970: 2_000_000_000), oauthRefreshToken: "r"))
        #expect(
            GitCredentialMessage.format(credential)
                == "protocol=https\nhost=example.com:8443\npath=a/b.git\nusername=bob\npassword=p=w\n"
                + "password_expiry_utc=2000000000\noauth_refresh_token=r\n")
        #expect(GitCredentialMessage.parse(Array("host=only\n\n".utf8)) == nil)
        #expect(
            GitCredentialMessage.parse(Array("url=https://u@h.example:99/x\n".utf8))?.location
                == "https://u@h.example:99/x")
    }

    @Test func storedSecretCarriesExpiryAndRefreshToken() {
        var credential = NetworkCredential(
            protocol: "https", host: "h", password: "tok", passwordExpiry: Date(timeIntervalSince1970: 5),
            oauthRefreshToken: "r")
        #expect(credential.storedSecret == "tok\npassword_expiry_utc=5\noauth_refresh_token=r")
        #expect(credential.isExpired())
        var read = NetworkCredential(protocol: "https", host: "h")
        read.readStoredSecret(credential.storedSecret)
        #expect(read == credential)
        credential.passwordExpiry = nil
        credential.oauthRefreshToken = nil
        #expect(credential.storedSecret == "tok" && !credential.isExpired())
    }

    @Test func keyedCredentialsAreItemsOfTheirService() throws {
        let store = InMemorySecretStore()
        let git = try ServiceName("git")
        let credentials = store.networkCredentials(service: git)
        let alice = NetworkCredential(protocol: "https", host: "h", username: "alice", password: "a")
        let bob = NetworkCredential(protocol: "https", host: "h", username: "bob", password: "b")
        try credentials.store(bob)
        try credentials.store(alice)
        #expect(try store.items(service: git).map(\.key).sorted() == ["https://alice@h", "https://bob@h"])
        #expect(try credentials.credential(matching: NetworkCredential(protocol: "https", host: "h")) == alice)
        #expect(
            try credentials.credential(matching: NetworkCredential(protocol: "https", host: "h", username: "bob"))
                == bob)
        #expect(try credentials.credential(matching: NetworkCredential(protocol: "https", host: "h", port: 1)) == nil)
        #expect(try credentials.erase(matching: NetworkCredential(protocol: "https", host: "h")) == 2)
        #expect(try store.items(service: git).isEmpty)
    }
}
