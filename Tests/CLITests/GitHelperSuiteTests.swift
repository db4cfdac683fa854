import Foundation
import TestSupport
import Testing

/// git's own credential-helper suite (t/lib-credential.sh, `helper_test`), its cases restated as
/// facts and run against keychain-cli on every backend through the real `git credential
/// fill|approve|reject`, with git's askpass script answering whatever the helper does not.
@Suite("git's credential-helper suite, on every backend", .keyringSession)
final class GitHelperSuiteTests {
    let scratch: ScratchDirectory
    let askpass: String

    init() throws {
        scratch = try ScratchDirectory("git-helper-suite")
        askpass = scratch.path("askpass")
        // As lib-credential.sh writes it: the prompt to stderr, "askpass-username" or
        // "askpass-password" (the prompt's first word, lower case) to stdout.
        try """
        #!/bin/sh
        echo >&2 askpass: $*
        what=`echo $1 | cut -d" " -f1 | tr A-Z a-z | tr -cd a-z`
        echo "askpass-$what"
        """.write(toFile: askpass, atomically: true, encoding: .utf8)
        chmod(askpass, 0o755)
    }

    deinit { scratch.remove() }

    /// `git credential ACTION` with `input` lines; for fill, its stdout and stderr must be exactly
    /// `stdout` and `stderr` lines (lib-credential.sh's `check`).
    private func check(
        _ action: String, _ input: [String], stdout: [String] = [], stderr: [String] = [], httpPath: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let options = httpPath ? ["-c", "credential.useHttpPath=true"] : []
        let result = try git(
            options + ["credential", action], input: input.map { $0 + "\n" }.joined(),
            extra: ["GIT_ASKPASS": askpass])
        #expect(result.status == 0, "\(action) \(input): \(result.stderr)", sourceLocation: sourceLocation)
        let lines = { (text: String) in text.split(separator: "\n").map(String.init) }
        #expect(lines(result.stdoutText) == stdout, "\(action) \(input)", sourceLocation: sourceLocation)
        #expect(lines(result.stderr) == stderr, "\(action) \(input)", sourceLocation: sourceLocation)
    }

    /// What fill prints when no helper answers and askpass gives both.
    private func asked(_ scheme: String, _ host: String, path: String? = nil) -> (stdout: [String], stderr: [String]) {
        let place = "\(scheme)://\(host)" + (path.map { "/\($0)" } ?? "")
        let withUser = "\(scheme)://askpass-username@\(host)" + (path.map { "/\($0)" } ?? "")
        return (
            ["protocol=\(scheme)", "host=\(host)"] + (path.map { ["path=\($0)"] } ?? [])
                + ["username=askpass-username", "password=askpass-password"],
            ["askpass: Username for '\(place)':", "askpass: Password for '\(withUser)':"]
        )
    }

    @Test(arguments: CLIBackend.allCases)
    func helperTest(on backend: CLIBackend) throws {
        try backend.run {
            // Hosts of this run alone: the Secret Service suite's keyring is shared.
            let tag = uniqueService().lowercased()
            let example = "example-\(tag).com"
            let other = "other-\(tag).tld"
            let pathHost = "path-\(tag).tld"
            let sso = "sso-\(tag).tld"

            // has no existing data
            var (out, err) = asked("https", example)
            try check("fill", ["protocol=https", "host=\(example)"], stdout: out, stderr: err)
            // stores password; can retrieve password
            try check("approve", ["protocol=https", "host=\(example)", "username=store-user", "password=store-pass"])
            try check(
                "fill", ["protocol=https", "host=\(example)"],
                stdout: ["protocol=https", "host=\(example)", "username=store-user", "password=store-pass"])
            // requires matching protocol
            (out, err) = asked("http", example)
            try check("fill", ["protocol=http", "host=\(example)"], stdout: out, stderr: err)
            // requires matching host
            (out, err) = asked("https", other)
            try check("fill", ["protocol=https", "host=\(other)"], stdout: out, stderr: err)
            // requires matching username
            try check(
                "fill", ["protocol=https", "host=\(example)", "username=other"],
                stdout: ["protocol=https", "host=\(example)", "username=other", "password=askpass-password"],
                stderr: ["askpass: Password for 'https://other@\(example)':"])
            // requires matching path
            try check(
                "approve", ["protocol=http", "host=\(pathHost)", "path=foo.git", "username=user", "password=pass"],
                httpPath: true)
            (out, err) = asked("http", pathHost, path: "bar.git")
            try check(
                "fill", ["protocol=http", "host=\(pathHost)", "path=bar.git"], stdout: out, stderr: err, httpPath: true)
            // can forget host
            try check("reject", ["protocol=https", "host=\(example)"])
            (out, err) = asked("https", example)
            try check("fill", ["protocol=https", "host=\(example)"], stdout: out, stderr: err)
            // can store multiple users
            try check("approve", ["protocol=https", "host=\(example)", "username=user1", "password=pass1"])
            try check("approve", ["protocol=https", "host=\(example)", "username=user2", "password=pass2"])
            for user in ["user1", "user2"] {
                try check(
                    "fill", ["protocol=https", "host=\(example)", "username=\(user)"],
                    stdout: ["protocol=https", "host=\(example)", "username=\(user)", "password=pass\(user.last!)"])
            }
            // can forget user; remembers other user
            try check("reject", ["protocol=https", "host=\(example)", "username=user1"])
            try check(
                "fill", ["protocol=https", "host=\(example)", "username=user1"],
                stdout: ["protocol=https", "host=\(example)", "username=user1", "password=askpass-password"],
                stderr: ["askpass: Password for 'https://user1@\(example)':"])
            try check(
                "fill", ["protocol=https", "host=\(example)", "username=user2"],
                stdout: ["protocol=https", "host=\(example)", "username=user2", "password=pass2"])
            // does not erase a password distinct from input (git's reject names the password it
            // was refused; one stored since survives)
            try check("reject", ["protocol=https", "host=\(example)", "username=user2", "password=not-pass2"])
            try check(
                "fill", ["protocol=https", "host=\(example)", "username=user2"],
                stdout: ["protocol=https", "host=\(example)", "username=user2", "password=pass2"])
            try check("reject", ["protocol=https", "host=\(example)", "username=user2", "password=pass2"])
            (out, err) = asked("https", example)
            try check("fill", ["protocol=https", "host=\(example)"], stdout: out, stderr: err)
            // overwrites on store
            try check("approve", ["protocol=https", "host=\(example)", "username=u", "password=first"])
            try check("approve", ["protocol=https", "host=\(example)", "username=u", "password=second"])
            try check(
                "fill", ["protocol=https", "host=\(example)", "username=u"],
                stdout: ["protocol=https", "host=\(example)", "username=u", "password=second"])
            // erases every matching credential: a field left out (here the path) matches any
            try check(
                "approve", ["protocol=http", "host=\(pathHost)", "path=baz.git", "username=user", "password=pass"],
                httpPath: true)
            try check("reject", ["protocol=http", "host=\(pathHost)"])
            for path in ["foo.git", "baz.git"] {
                (out, err) = asked("http", pathHost, path: path)
                try check(
                    "fill", ["protocol=http", "host=\(pathHost)", "path=\(path)"], stdout: out, stderr: err,
                    httpPath: true)
            }
            // can store empty username
            try check("approve", ["protocol=https", "host=\(sso)", "username=", "password="])
            try check(
                "fill", ["protocol=https", "host=\(sso)"],
                stdout: ["protocol=https", "host=\(sso)", "username=", "password="])
            for host in [example, sso] { try check("reject", ["protocol=https", "host=\(host)"]) }
        }
    }

    /// The suite's `helper_test_password_expiry_utc` and `helper_test_oauth_refresh_token`, told
    /// to the helper itself: the git of Debian 12 (2.39) predates both fields and drops them.
    @Test(arguments: CLIBackend.allCases)
    func expiryAndRefreshTokenTest(on backend: CLIBackend) throws {
        try backend.run {
            let host = "example-\(uniqueService().lowercased()).com"
            func helper(_ action: String, _ fields: [String]) throws -> String {
                let result = try cli(["git-credential", action], input: fields.map { $0 + "\n" }.joined())
                #expect(result.status == 0, "\(action) \(fields): \(result.stderr)")
                return result.stdoutText
            }
            let base = ["protocol=https", "host=\(host)"]
            // stores password_expiry_utc; gets password_expiry_utc
            _ = try helper("store", base + ["username=user-expiry", "password=pass", "password_expiry_utc=9999999999"])
            #expect(
                try helper("get", base + ["username=user-expiry"])
                    == (base + ["username=user-expiry", "password=pass", "password_expiry_utc=9999999999", ""])
                    .joined(separator: "\n"))
            // overwrites when password_expiry_utc changes
            let user = "username=user-expiry-overwrite"
            _ = try helper("store", base + [user, "password=pass1", "password_expiry_utc=9999999998"])
            _ = try helper("store", base + [user, "password=pass2", "password_expiry_utc=9999999999"])
            #expect(
                try helper("get", base + [user])
                    == (base + [user, "password=pass2", "password_expiry_utc=9999999999", ""]).joined(separator: "\n"))
            _ = try helper("erase", base + [user, "password=pass2"])
            #expect(try helper("get", base + [user]).isEmpty)
            // stores oauth_refresh_token; gets oauth_refresh_token
            _ = try helper("store", base + ["username=user4", "password=pass", "oauth_refresh_token=xyzzy"])
            #expect(
                try helper("get", base + ["username=user4"])
                    == (base + ["username=user4", "password=pass", "oauth_refresh_token=xyzzy", ""])
                    .joined(separator: "\n"))
            _ = try helper("erase", base)
            #expect(try helper("get", base).isEmpty)
        }
    }
}
