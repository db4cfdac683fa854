import Foundation
import TestSupport
import Testing

private func stockHelper(_ action: String, _ input: String) throws -> ProcessResult {
    try runProcess(
        try libsecretGitHelper.get(), [action], stdin: Data(input.utf8),
        environment: KeyringSession.current!.environment)
}

@Suite("git credentials shared with git-credential-libsecret", .keyringSession)
struct GitCredentialInteropTests {
    @Test func eachHelperReadsWhatTheOtherStored() throws {
        let host = "\(uniqueService()).example".lowercased()
        let stored = try stockHelper(
            "store",
            credentialLines(["protocol": "https", "host": "\(host):8443", "username": "al", "password": "stock"]))
        #expect(stored.status == 0, "\(stored.stderr)")
        let ours = try cli(
            ["git-credential", "get"], input: credentialLines(["protocol": "https", "host": "\(host):8443"]))
        #expect(ours.stdoutText == "protocol=https\nhost=\(host):8443\nusername=al\npassword=stock\n")

        let approve = try git(
            ["credential", "approve"],
            input: credentialLines(["protocol": "https", "host": host, "username": "bo", "password": "ours"]))
        #expect(approve.status == 0)
        // (The stock helper's search ignores the port it is not given: the user name tells them apart.)
        let theirs = try stockHelper("get", credentialLines(["protocol": "https", "host": host, "username": "bo"]))
        #expect(theirs.stdoutText.contains("username=bo\n") && theirs.stdoutText.contains("password=ours\n"))

        // Erasing with ours removes the stock helper's item.
        #expect(
            try cli(
                ["git-credential", "erase"], input: credentialLines(["protocol": "https", "host": "\(host):8443"])
            )
            .status == 0)
        #expect(try stockHelper("get", credentialLines(["protocol": "https", "host": "\(host):8443"])).stdout.isEmpty)
    }

    /// Upstream git's helper writes schema org.git.Password with the expiry and refresh token
    /// appended to the secret.
    @Test func upstreamGitsItemsWithExpiryAndRefreshTokenAreRead() throws {
        let host = "\(uniqueService()).example".lowercased()
        let expiry = Int(Date().timeIntervalSince1970) + 600
        let store = try secretTool(
            [
                "store", "--label=Git: https://\(host)/", "xdg:schema", "org.git.Password", "protocol", "https",
                "server", host, "user", "ci",
            ],
            input: "access\npassword_expiry_utc=\(expiry)\noauth_refresh_token=refresh")
        #expect(store.status == 0, "\(store.stderr)")
        let get = try cli(["git-credential", "get"], input: credentialLines(["protocol": "https", "host": host]))
        #expect(
            get.stdoutText
                == "protocol=https\nhost=\(host)\nusername=ci\npassword=access\npassword_expiry_utc=\(expiry)\n"
                + "oauth_refresh_token=refresh\n")
    }

    /// No prompter (a headless machine): a locked keyring is one line and a non-zero exit, in time.
    @Test func aLockedKeyringFailsAtOnceWithOneLine() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        #expect(
            try cli(
                ["git-credential", "store"],
                input: credentialLines([
                    "protocol": "https", "host": "h.example",
                    "username": "u", "password": "p",
                ]),
                session: session
            ).status == 0)
        try session.lockLogin()
        // (Within the timeout: a process timeout of 10 times it throws ProcessTimedOut.)
        let result = try cli(
            ["git-credential", "get"], stdin: Data(credentialLines(["protocol": "https", "host": "h.example"]).utf8),
            session: session, extra: ["KEYCHAIN_TIMEOUT": "2"], timeout: 20)
        #expect([75, 77].contains(result.status), "\(result.status) \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1)
    }
}
