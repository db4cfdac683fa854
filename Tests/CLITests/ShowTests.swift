import Foundation
import TestSupport
import Testing

/// `show KEY`: an entry's fields, dates and notes, never its password or TOTP seed unless
/// `--reveal`, on every backend.
@Suite("show an entry's fields", .keyringSession)
struct ShowTests {
    /// A Bitwarden login as import stores it: the password, fields, the otpauth:// line, notes.
    static let entry = """
        pw-show-secret
        username: octocat
        url: https://github.com/login
        "a: b": "two\\nlines"
        previous password: pw-old-secret
        otpauth://totp/github?secret=JBSWY3DPEHPK3PXP

        my notes
        line 2
        """

    @Test(arguments: CLIBackend.allCases)
    func theFieldsAreShownAndThePasswordAndSeedOnlyWhenRevealed(on backend: CLIBackend) throws {
        try backend.run {
            #expect(try cli(["-s", "show", "set", "Dev/github"], stdin: Data(Self.entry.utf8)).status == 0)
            let shown = try cli(["-s", "show", "show", "Dev/github"])
            #expect(shown.status == 0, "\(shown.stderr)")
            let lines = shown.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(
                Array(lines.prefix(6)) == [
                    "password: (hidden; --reveal prints it)", "username: octocat", "url: https://github.com/login",
                    #""a: b": "two\nlines""#, "previous password: (hidden; --reveal prints it)",
                    "otp: (hidden; --reveal prints it, otp KEY its code)",
                ])
            #expect(shown.stdoutText.hasSuffix("\n\nmy notes\nline 2\n"))
            for secret in ["pw-show-secret", "pw-old-secret", "JBSWY3DPEHPK3PXP"] {
                #expect(!shown.stdoutText.contains(secret))
            }

            let revealed = try cli(["-s", "show", "show", "Dev/github", "--reveal"]).stdoutText
            #expect(revealed.hasPrefix("password: pw-show-secret\nusername: octocat\n"))
            #expect(
                revealed.contains(
                    "previous password: pw-old-secret\notp: otpauth://totp/github?secret=JBSWY3DPEHPK3PXP\n"))

            let json = try cli(["-s", "show", "show", "Dev/github", "--json"])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any])
            #expect(
                object["hidden"] as? [String] == ["password", "previous password", "otp"] && object["password"] == nil)
            let fields = try #require(object["fields"] as? [[String: String]])
            #expect(fields.map { $0["name"] } == ["username", "url", "a: b"] && fields[2]["value"] == "two\nlines")
            #expect(object["notes"] as? String == "my notes\nline 2" && object["key"] as? String == "Dev/github")
            let revealedJSON = try cli(["-s", "show", "show", "Dev/github", "--json", "--reveal"]).stdoutText
            #expect(revealedJSON.contains(#""password" : "pw-show-secret""#))
        }
    }

    /// The dates where the backend keeps them, a single-line secret as its hidden password, and
    /// the errors: binary (65), missing (1).
    @Test(arguments: [CLIBackend.vault, .treeVault])
    func datesPlainSecretsAndErrors(on backend: CLIBackend) throws {
        try backend.run {
            #expect(try cli(["-s", "show", "set", "token"], stdin: Data("abc".utf8)).status == 0)
            let plain = try cli(["-s", "show", "show", "token"]).stdoutText
            let lines = plain.split(separator: "\n").map(String.init)
            #expect(lines.first == "password: (hidden; --reveal prints it)" && lines.count == 3, "\(plain)")
            #expect(lines[1].hasPrefix("created: 20") && lines[2].hasPrefix("modified: 20") && lines[1].hasSuffix("Z"))
            #expect(try cli(["-s", "show", "set", "bin"], stdin: Data([0xFF, 0x00, 0xFE])).status == 0)
            let binary = try cli(["-s", "show", "show", "bin"])
            #expect(binary.status == 65 && binary.stderr.contains("binary") && binary.stdoutText.isEmpty)
            let missing = try cli(["-s", "show", "show", "nope"])
            #expect(missing.status == 1 && missing.stderr.contains("no secret named 'nope'"))
        }
    }

    /// What an outside attack tried: a `Password:` field in another case, a second and an
    /// upper-case or indented otpauth:// line, `otp:SEED` and `password:X` without their space,
    /// are hidden in their place; free text is printed as it is; `--reveal` prints every line.
    @Test func everyPasswordOrSeedLineIsHiddenWhateverItsSpelling() throws {
        try CLIBackend.withVault { _ in
            let entry =
                "pw1\nusername: bob\nPassword: LEAK1\nfree text\n OTPAUTH://totp/x?secret=SEED2\n"
                + "otpauth://totp/y?secret=SEED1\notp:SEED3\npassword:LEAK4\nurl: u\n\nnotes"
            #expect(try cli(["-s", "show", "set", "e"], stdin: Data(entry.utf8)).status == 0)
            for arguments in [["show", "e"], ["show", "e", "--json"]] {
                let shown = try cli(["-s", "show"] + arguments).stdoutText
                for secret in ["pw1", "LEAK1", "SEED1", "SEED2", "SEED3", "LEAK4"] {
                    #expect(!shown.contains(secret), "\(arguments): \(secret)")
                }
            }
            let lines = try cli(["-s", "show", "show", "e"]).stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.filter { $0.hasSuffix("(hidden; --reveal prints it, otp KEY its code)") }.count == 3)
            #expect(lines[3] == "free text" && lines[8] == "url: u")
            let revealed = try cli(["-s", "show", "show", "e", "--reveal"]).stdoutText
            for line in ["Password: LEAK1", "otp: otpauth://totp/y?secret=SEED1", "otp:SEED3", "password:LEAK4"] {
                #expect(revealed.contains(line + "\n"), "\(line)")
            }
        }
    }
}
