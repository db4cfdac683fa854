import Foundation
import TestSupport
import Testing

/// The `password=` line of `git credential fill`'s answer, or nil.
private func password(_ result: ProcessResult) -> String? {
    result.stdoutText.split(separator: "\n").first { $0.hasPrefix("password=") }.map { String($0.dropFirst(9)) }
}

@Suite("git credential helper", .keyringSession)
struct GitCredentialTests {
    @Test(arguments: CLIBackend.allCases)
    func approvedCredentialIsFilledAndRejectedOneIsGone(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let host = "\(uniqueService()).example".lowercased()
            let approve = try git(
                ["credential", "approve"],
                input: credentialLines(["protocol": "https", "host": host, "username": "bob", "password": "s3cret"]))
            #expect(approve.status == 0, "\(approve.stderr)")
            let fill = try git(["credential", "fill"], input: credentialLines(["protocol": "https", "host": host]))
            #expect(fill.status == 0, "\(fill.stderr)")
            #expect(fill.stdoutText.contains("username=bob\n"))
            #expect(password(fill) == "s3cret")
            #expect(!fill.stderr.contains("s3cret"))
            let reject = try git(
                ["credential", "reject"],
                input: credentialLines(["protocol": "https", "host": host, "username": "bob", "password": "s3cret"]))
            #expect(reject.status == 0)
            let after = try git(["credential", "fill"], input: credentialLines(["protocol": "https", "host": host]))
            #expect(after.status != 0, "no credential and no prompt: git gives up")
            #expect(password(after) == nil)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func userNamePortAndPathEachTellCredentialsApart(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let host = "\(uniqueService()).example".lowercased()
            let stored: [(KeyValuePairs<String, String>, String)] = [
                (["protocol": "https", "host": host, "username": "alice", "password": "a"], "a"),
                (["protocol": "https", "host": host, "username": "bob", "password": "b"], "b"),
                (["protocol": "https", "host": "\(host):8443", "username": "carol", "password": "c"], "c"),
                (
                    ["protocol": "https", "host": host, "path": "team/repo.git", "username": "dan", "password": "d"],
                    "d"
                ),
            ]
            for (lines, _) in stored {
                // git passes the path on only with useHttpPath.
                let result = try git(
                    ["-c", "credential.useHttpPath=true", "credential", "approve"], input: credentialLines(lines))
                #expect(result.status == 0)
            }
            func fill(_ lines: KeyValuePairs<String, String>, _ options: [String] = []) throws -> String? {
                password(try git(options + ["credential", "fill"], input: credentialLines(lines)))
            }
            #expect(try fill(["protocol": "https", "host": host, "username": "bob"]) == "b")
            #expect(try fill(["protocol": "https", "host": host]) == "a", "the first by location")
            #expect(try fill(["protocol": "https", "host": "\(host):8443"]) == "c")
            #expect(
                try fill(
                    ["protocol": "https", "host": host, "path": "team/repo.git"], ["-c", "credential.useHttpPath=true"])
                    == "d")
            #expect(try fill(["protocol": "http", "host": host]) == nil)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func theHelperProtocolDirectly(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let host = "\(uniqueService()).example".lowercased()
            let future = Int(Date().timeIntervalSince1970) + 3600
            let past = Int(Date().timeIntervalSince1970) - 60
            // Newer gits send capability[] lines; unknown keys are ignored.
            let store = try cli(
                ["git-credential", "store"],
                input: "capability[]=authtype\nprotocol=https\nhost=\(host)\nusername=u\npassword=token\n"
                    + "password_expiry_utc=\(future)\noauth_refresh_token=refresh\nfuture_key=x\n\n")
            #expect(store.status == 0, "\(store.stderr)")
            let get = try cli(
                ["git-credential", "get"], input: "capability[]=authtype\nprotocol=https\nhost=\(host)\n\n")
            #expect(
                get.stdoutText
                    == "protocol=https\nhost=\(host)\nusername=u\npassword=token\npassword_expiry_utc=\(future)\n"
                    + "oauth_refresh_token=refresh\n")
            // An expired password is neither stored nor returned.
            let expired = try cli(
                ["git-credential", "store"],
                input: "protocol=https\nhost=\(host)\nusername=u\npassword=old\npassword_expiry_utc=\(past)\n\n")
            #expect(expired.status == 0)
            #expect(
                try cli(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n").stdoutText.contains(
                    "token"))
            // Unknown actions are ignored; a miss prints nothing.
            let unknown = try cli(["git-credential", "frobnicate"], input: "protocol=https\nhost=\(host)\n\n")
            #expect(unknown.status == 0 && unknown.stdout.isEmpty)
            let miss = try cli(["git-credential", "get"], input: "protocol=https\nhost=nothing.\(host)\n\n")
            #expect(miss.status == 0 && miss.stdout.isEmpty)
            #expect(
                try cli(["git-credential", "erase"], input: "protocol=https\nhost=\(host)\nusername=u\n\n").status == 0)
            #expect(try cli(["git-credential", "get"], input: "protocol=https\nhost=\(host)\n\n").stdout.isEmpty)
        }
    }

    @Test(arguments: [CLIBackend.vault, .openbao])
    func onTheVaultAndOpenBaoTheyAreItemsOfTheServiceGit(on backend: CLIBackend) throws {
        try backend.run { () throws in
            let input = credentialLines([
                "protocol": "https", "host": "git.example", "username": "me@corp", "password": "pw",
            ])
            #expect(try git(["credential", "approve"], input: input).status == 0)
            #expect(try cli(["-s", "git", "list"]).stdoutText == "https://me%40corp@git.example\n")
            #expect(try cli(["-s", "git", "get", "https://me%40corp@git.example"]).stdoutText == "pw")
        }
    }

    /// A real clone over HTTP with basic auth: a wrong stored password fails without a prompt and
    /// git erases it (reject); the right one clones.
    @Test(arguments: CLIBackend.allCases)
    func gitCloneOverHTTPUsesTheStoredPassword(on backend: CLIBackend) throws {
        let server = try GitHTTPServer.shared.get()
        try backend.run { () throws in
            let target = try ScratchDirectory("clone")
            defer { target.remove() }
            let location: KeyValuePairs<String, String> = ["protocol": "http", "host": "127.0.0.1:\(server.port)"]
            func approve(_ password: String) throws {
                let lines = credentialLines([
                    "protocol": "http", "host": "127.0.0.1:\(server.port)", "username": server.user,
                    "password": password,
                ])
                #expect(try git(["credential", "approve"], input: lines).status == 0)
            }
            try approve("wrong")
            let failed = try git(["clone", "-q", server.url, target.path("first")])
            #expect(failed.status != 0)
            #expect(password(try git(["credential", "fill"], input: credentialLines(location))) == nil, "rejected")
            try approve(server.password)
            let cloned = try git(["clone", "-q", server.url, target.path("second")])
            #expect(cloned.status == 0, "\(cloned.stderr)")
            #expect(FileManager.default.fileExists(atPath: target.path("second/.git/HEAD")))
            #expect(!cloned.stderr.contains(server.password))
        }
    }

    /// A vault without its passphrase (and no terminal): git gets one line and a non-zero exit.
    @Test func aVaultWithoutItsPassphraseIsOneLineAndNoPrompt() throws {
        try CLIBackend.withVault { path in
            let lines = credentialLines(["protocol": "https", "host": "v.example", "username": "u", "password": "p"])
            #expect(try cli(["git-credential", "store"], input: lines).status == 0)
            var environment = CLIBackend.vaultEnvironment(path)
            environment["KEYCHAIN_PASSPHRASE"] = .some(nil)
            try CLIBackend.$overrides.withValue(environment) {
                // (No prompt waited at: a process timeout throws ProcessTimedOut.)
                let result = try cli(
                    ["git-credential", "get"],
                    stdin: Data(credentialLines(["protocol": "https", "host": "v.example"]).utf8),
                    timeout: 20)
                #expect(result.status == 77, "\(result.stderr)")
                #expect(result.stdout.isEmpty && result.stderr.split(separator: "\n").count == 1)
                let fill = try git(
                    ["credential", "fill"], input: credentialLines(["protocol": "https", "host": "v.example"]))
                #expect(fill.status != 0 && fill.stderr.contains("passphrase"), "\(fill.stderr)")
            }
        }
    }

    @Test func aBadKeychainTimeoutIsAUsageError() throws {
        let result = try cli(
            ["git-credential", "get"], stdin: Data("protocol=https\nhost=x\n\n".utf8),
            extra: ["KEYCHAIN_TIMEOUT": "soon"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("KEYCHAIN_TIMEOUT"))
    }
}
