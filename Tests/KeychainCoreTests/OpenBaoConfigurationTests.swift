import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainOpenBao

/// The openbao backend's settings from the environment, its paths and its field encoding, without
/// a server (the server-side behaviour is in CLITests/OpenBaoTests and the cluster suite).
@Suite("OpenBao settings, paths and values")
struct OpenBaoConfigurationTests {
    private func configuration(_ environment: [String: String], files: [String: String] = [:]) throws(KeychainError)
        -> OpenBaoConfiguration
    {
        try OpenBaoConfiguration.fromEnvironment(environment) { path in files[path] }
    }

    private func source(_ credentials: OpenBaoConfiguration.Credentials) -> String {
        switch credentials {
        case .token(let token, let source): "\(source)=\(token)"
        case .appRole(let role, let secret, let mount): "approle \(role)/\(secret) at \(mount)"
        case .jwt(let jwt, let role, let mount): "jwt \(jwt) role \(role ?? "-") at \(mount)"
        case .none: "none"
        }
    }

    @Test func settingsFollowTheBaoCLIsPrecedence() throws {
        let files = ["/home/me/.vault-token": "file-token\n", "/run/id": "jwt-from-file\n"]
        func credentials(_ environment: [String: String]) throws -> String {
            source(try configuration(environment.merging(["HOME": "/home/me"]) { $1 }, files: files).credentials)
        }
        #expect(try credentials(["BAO_TOKEN": "b", "VAULT_TOKEN": "v"]) == "$BAO_TOKEN=b")
        #expect(try credentials(["VAULT_TOKEN": "v", "KEYCHAIN_OPENBAO_JWT": "j"]) == "$VAULT_TOKEN=v")
        #expect(
            try credentials([
                "KEYCHAIN_OPENBAO_ROLE_ID": "r", "KEYCHAIN_OPENBAO_SECRET_ID": "s", "KEYCHAIN_OPENBAO_JWT": "j",
            ])
                == "approle r/s at approle")
        #expect(
            try credentials(["KEYCHAIN_OPENBAO_JWT_FILE": "/run/id", "KEYCHAIN_OPENBAO_JWT_MOUNT": "gitlab"])
                == "jwt jwt-from-file role - at gitlab")
        #expect(try credentials([:]) == "~/.vault-token=file-token")
        #expect(try credentials(["BAO_TOKEN": ""]) == "~/.vault-token=file-token")
        #expect(source(try configuration([:]).credentials) == "none")

        let defaults = try configuration([:])
        #expect(defaults.address == "https://127.0.0.1:8200" && defaults.mount == "secret")
        let chosen = try configuration([
            "VAULT_ADDR": "https://v:8200/", "BAO_NAMESPACE": "team", "VAULT_CACERT": "/ca.pem",
            "KEYCHAIN_OPENBAO_MOUNT": "/kv/",
        ])
        #expect(chosen.address == "https://v:8200" && chosen.namespace == "team" && chosen.caFile == "/ca.pem")
        #expect(chosen.mount == "kv")
    }

    /// Each is `badConfiguration` (exit 64) with what to change, or one of the settings' problems
    /// (exit 64 too) whose variables the command line's hint names.
    @Test func settingsThatCannotWorkAreUsageErrors() {
        for environment in [
            ["BAO_ADDR": "http://bao.example.com:8200"],  // a token in clear text over the network
            ["BAO_ADDR": "http://10.0.0.1"], ["BAO_ADDR": "ftp://x"], ["BAO_ADDR": "https://"],
            ["BAO_ADDR": "https://x/?a"], ["KEYCHAIN_OPENBAO_ROLE_ID": "r"], ["KEYCHAIN_OPENBAO_MOUNT": "a/../b"],
            ["KEYCHAIN_OPENBAO_JWT_FILE": "/missing"],
        ] {
            do {
                _ = try configuration(environment)
                Issue.record("accepted \(environment)")
            } catch {
                if case .openBao(.halfAnAppRole) = error { continue }
                if case .openBao(.mountNotAPath) = error { continue }
                if case .openBao(.settingFileMissing) = error { continue }
                guard case .badConfiguration(let detail) = error else {
                    Issue.record("\(environment): \(error)")
                    continue
                }
                let advice = ["set ", "use ", "fix "].contains { detail.lowercased().contains($0) }
                #expect(advice, "\(detail)")
            }
        }
        for address in ["http://127.0.0.1:8200", "http://127.3.4.5", "http://localhost:1", "http://[::1]:8200"] {
            #expect((try? configuration(["BAO_ADDR": address]))?.isLoopback == true, "\(address)")
        }
    }

    @Test func servicesArePercentEncodedPathsUnderTheMount() throws {
        #expect(try kvPath("ci") == "ci")
        #expect(try kvPath("team/deploy") == "team/deploy")
        #expect(try kvPath("a b/ü?#%") == "a%20b/%C3%BC%3F%23%25")
        for bad in ["", "/ci", "ci/", "a//b", ".", "a/..", "../x"] {
            #expect(throws: KeychainError.self, "\(bad)") { try kvPath(bad) }
        }
    }

    @Test func textIsAJSONStringAndOtherBytesRoundTrip() throws {
        #expect(KVValue.encode(Data("ghp_x".utf8)) == .string("ghp_x"))
        for bytes in [Data([0, 0xFF, 0x80, 10]), Data([0xC3]), Data()] {
            #expect(KVValue.decode(KVValue.encode(bytes)) == bytes)
        }
        // A field another tool wrote as a number or an object reads as its JSON text.
        let document = #"{"n": 42, "o": {"a": [true, null]}}"#
        let fields = try JSONDecoder().decode([String: JSONValue].self, from: Data(document.utf8))
        #expect(String(decoding: KVValue.decode(try #require(fields["n"])), as: UTF8.self) == "42")
        #expect(String(decoding: KVValue.decode(try #require(fields["o"])), as: UTF8.self) == #"{"a":[true,null]}"#)
    }

    /// Messages show the address without what may be a secret: a password in the user part (as
    /// Go's URL.Redacted writes it), a query, a fragment; the rest as it is.
    @Test func addressesAreShownWithoutPasswordsOrQueries() {
        let cases = [
            ("https://admin:pw@bao.example:8200", "https://admin:xxxxx@bao.example:8200"),
            ("https://admin@bao.example", "https://admin@bao.example"),
            ("https://bao.example/v1?token=t", "https://bao.example/v1"),
            ("https://bao.example#t", "https://bao.example"),
            ("https://bao.example/a@b:c", "https://bao.example/a@b:c"),
            ("https://u:p:q@[::1]:8200", "https://u:xxxxx@[::1]:8200"),
        ]
        for (address, shown) in cases {
            #expect(OpenBaoConfiguration.redacted(address) == shown, "\(address)")
        }
    }
}
