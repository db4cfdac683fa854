import Foundation
import TestSupport
import Testing

/// What git and docker hand their helpers besides the everyday request: CRLF lines, an expired
/// OAuth token, a client certificate's passphrase, a terminal around the helper.
@Suite("Credential helpers: CRLF, expiry, certificates, terminals", .keyringSession)
struct CredentialHelperEdgeTests {
    /// git reads CRLF lines as lines (strbuf_getline); "\r\n" is one Swift Character, so a parser
    /// that splits a String at "\n" stores nothing, or a password ending in CR LF that swallows
    /// the next line.
    @Test(arguments: CLIBackend.allCases)
    func crlfLinesAreLines(on backend: CLIBackend) throws {
        try backend.run {
            let host = "\(uniqueService()).example".lowercased()
            let stored = try cli(
                ["git-credential", "store"],
                input: "protocol=https\r\nhost=\(host)\r\npassword=p2\r\nusername=u\r\n\r\nusername=ignored\r\n")
            #expect(stored.status == 0, "\(stored.stderr)")
            let got = try cli(["git-credential", "get"], input: "protocol=https\r\nhost=\(host)\r\n\r\n")
            #expect(got.stdoutText == "protocol=https\nhost=\(host)\nusername=u\npassword=p2\n")
            #expect(try cli(["git-credential", "erase"], input: "protocol=https\r\nhost=\(host)\r\n\r\n").status == 0)
            #expect(try cli(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n").stdout.isEmpty)
        }
    }

    /// Once `password_expiry_utc` has passed, the password is no use, but the refresh token kept
    /// with it is what an OAuth helper after this one needs to get a new one.
    @Test(arguments: CLIBackend.allCases)
    func anExpiredPasswordStillGivesItsUserAndRefreshToken(on backend: CLIBackend) throws {
        try backend.run {
            let host = "\(uniqueService()).example".lowercased()
            // Time enough for the store and the first get on a loaded machine (two seconds were
            // not, under seven suites at once); a stored credential that already expired is not kept.
            let expiry = Int(Date().timeIntervalSince1970) + 6
            let stored = try cli(
                ["git-credential", "store"],
                input: credentialLines([
                    "protocol": "https", "host": host, "username": "u", "password": "access-token",
                    "password_expiry_utc": "\(expiry)", "oauth_refresh_token": "refresh-token",
                ]))
            #expect(stored.status == 0, "\(stored.stderr)")
            let fresh = try cli(
                ["git-credential", "get"], input: credentialLines(["protocol": "https", "host": host]))
            #expect(fresh.stdoutText.contains("password=access-token\n"))
            while Int(Date().timeIntervalSince1970) <= expiry { usleep(100_000) }
            let expired = try cli(
                ["git-credential", "get"], input: credentialLines(["protocol": "https", "host": host]))
            #expect(
                expired.stdoutText == "protocol=https\nhost=\(host)\nusername=u\noauth_refresh_token=refresh-token\n",
                "\(expired.stdoutText)")
            _ = try cli(["git-credential", "erase"], input: credentialLines(["protocol": "https", "host": host]))
        }
    }

    /// `http.sslCertPasswordProtected`: git asks for `protocol=cert`, an empty host, an empty user
    /// name and the certificate's path (git-credential(1)).
    @Test(arguments: CLIBackend.allCases)
    func aClientCertificatesPassphraseIsStoredAndFound(on backend: CLIBackend) throws {
        try backend.run {
            let certificate = "/home/dev/\(uniqueService()).p12"
            let request = ["protocol=cert", "host=", "path=\(certificate)", "username="]
            let approve = try git(
                ["credential", "approve"], input: (request + ["password=pkcs12-pass", ""]).joined(separator: "\n"))
            #expect(approve.status == 0, "\(approve.stderr)")
            let fill = try git(["credential", "fill"], input: (request + [""]).joined(separator: "\n"))
            #expect(fill.status == 0, "\(fill.stderr)")
            #expect(fill.stdoutText == (request + ["password=pkcs12-pass", ""]).joined(separator: "\n"))
            #expect(try git(["credential", "reject"], input: (request + [""]).joined(separator: "\n")).status == 0)
            #expect(try git(["credential", "fill"], input: (request + [""]).joined(separator: "\n")).status != 0)
        }
    }

    /// git runs its helpers with the terminal it has: a helper that needs the vault's passphrase
    /// must not ask there (and wait), but fail at once.
    @Test func theHelpersNeverAskForTheVaultsPassphraseAtATerminal() throws {
        try CLIBackend.withVault { (vault: String) throws in
            #expect(try cli(["-s", "git", "set", "https://u@h.example"], input: "pw").status == 0)
            let script = vault + ".sh"
            try """
            printf 'protocol=https\\nhost=h.example\\n\\n' | "$KEYCHAIN_CLI" git-credential get; echo git-status=$?
            printf 'h.example' | "$KEYCHAIN_CLI" docker-credential get; echo docker-status=$?
            """.write(toFile: script, atomically: true, encoding: .utf8)
            var overrides = CLIBackend.overrides
            overrides["KEYCHAIN_PASSPHRASE"] = .some(nil)
            let result = try CLIBackend.$overrides.withValue(overrides) {
                try expect(
                    """
                    set timeout 15
                    spawn sh \(script)
                    expect {
                        "assphrase for the vault" { exit 99 }
                        timeout { exit 98 }
                        eof
                    }
                    """)
            }
            // (expect's own timeout, 15 s, is the bound: 98.)
            #expect(result.status == 0, "it asked, or hung: \(result.stdoutText)")
            #expect(result.stdoutText.contains("git-status=77"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("docker-status=1"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("a credential helper never asks"), "\(result.stdoutText)")
        }
    }

    /// age reads identity and recipients files with CRLF line ends (written on Windows, or by an
    /// editor set so); so does the vault.
    @Test func crlfIdentityAndRecipientsFilesOpenTheVaultAsAgeReadsThem() throws {
        let directory = try ScratchDirectory("crlf-age")
        defer { directory.remove() }
        let identity = directory.path("identity.txt")
        let recipient = try cli(["vault", "keygen", "-o", identity], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        let crlf = { (path: String) throws in
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try text.replacing("\n", with: "\r\n").write(toFile: path + ".crlf", atomically: true, encoding: .utf8)
            chmod(path + ".crlf", 0o600)
        }
        try crlf(identity)
        try "# the team\n\(recipient)\n".write(toFile: directory.path("recipients"), atomically: true, encoding: .utf8)
        try crlf(directory.path("recipients"))
        let vault = directory.path("team.age")
        let base = ["--vault", vault, "--identity", identity + ".crlf"]
        let added = try cli(base + ["vault", "recipients", "add", directory.path("recipients.crlf")], session: nil)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try cli(base + ["-s", "ci", "set", "k"], input: "v", session: nil).status == 0)
        #expect(try cli(base + ["-s", "ci", "get", "k"], session: nil).stdoutText == "v")
        // The real age reads the same files.
        let age = try runProcess(
            "/usr/bin/age", ["-d", "-i", identity + ".crlf", vault], environment: ["PATH": "/usr/bin:/bin"])
        #expect(age.status == 0 && age.stdoutText.contains("\"k\""), "\(age.stderr)")
    }
}
