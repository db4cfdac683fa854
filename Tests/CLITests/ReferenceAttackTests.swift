import Foundation
import TestSupport
import Testing

/// What an attack on references found (2026-11-29), each as a fact: messages name the place of a
/// reference and never its text, bytes that are not UTF-8 are refused rather than read as
/// another name, and --from refuses zsh's prompt variables and configuration that runs programs.
@Suite("References under attack", .keyringSession)
struct ReferenceAttackTests {
    /// Runs `script` with sh, keychain-cli as $K, on the test's backend.
    private func shell(_ script: String) throws -> ProcessResult {
        var environment = cliEnvironment()
        environment["K"] = keychainCLIPath
        return try runProcess("/bin/sh", ["-c", script], environment: environment)
    }

    @Test func malformedReferencesAreNamedByPlaceNeverByText() throws {
        try CLIBackend.withVault { _ in
            let pasted = "Xq9vS3cr3t"
            for template in [
                "{{ keychain://ci/\(pasted)%P@ss }}", "{{ keychain://db/\(pasted)#1 }}",
                "{{ keychain://ci/\(pasted)?x }}",
                "pw: {{ keychain://ci/\(pasted) }", "{{ keychain://ci/a%00\(pasted) }}",
            ] {
                let result = try cli(["inject"], input: template + "\n")
                #expect(result.status == 64, "\(template): \(result.stderr)")
                #expect(result.stderr.hasPrefix("keychain-cli: standard input:1: "), "\(result.stderr)")
                #expect(!result.stderr.contains(pasted), "\(result.stderr)")
            }
            let env = try cli(["env", "--env", "MYVAR=keychain://ci/a%00b"])
            #expect(env.status == 64)
            #expect(env.stderr.hasPrefix("keychain-cli: --env MYVAR: "), "\(env.stderr)")
        }
    }

    @Test func namesAndPathsInMessagesAreEscapedToOneLine() throws {
        try CLIBackend.withVault { _ in
            let escaped = try shell(#"env "$(printf 'A\033]0;x\007B=keychain://ci/nope')" "$K" exec -- true"#)
            #expect(escaped.status == 1)
            #expect(!escaped.stderr.contains("\u{1B}"), "\(escaped.stderr)")
            let split = try shell(#"env "$(printf 'A\n::error::fake=keychain://ci/nope')" "$K" exec -- true"#)
            #expect(split.stderr.split(separator: "\n").count == 1, "\(split.stderr)")
            let scratch = try ScratchDirectory("reference-paths")
            defer { scratch.remove() }
            let file = scratch.path("x\u{1B}[31m\nfake.env")
            try "A=keychain://ci/nope\n".write(toFile: file, atomically: true, encoding: .utf8)
            let listed = try cli(["env", "--env-file", file])
            #expect(listed.status == 1)
            #expect(
                !listed.stderr.contains("\u{1B}") && listed.stderr.split(separator: "\n").count == 1, "\(listed.stderr)"
            )
        }
    }

    /// An inherited reference whose value or name is not UTF-8 names no secret: 64, nothing run.
    @Test func bytesThatAreNotUTF8AreRefusedNotReadAsAnotherName() throws {
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "ci", "set", "tok\u{FFFD}en"], input: "other-secret")
            _ = try cli(["-s", "ci", "set", "token"], input: "the-secret")
            for variable in [#"X=keychain://ci/tok\377en"#, #"A\377B=keychain://ci/token"#] {
                let result = try shell(#"env "$(printf '\#(variable)')" "$K" exec --no-mask -- printenv X"#)
                #expect(result.status == 64, "\(variable): \(result.stderr)")
                #expect(!result.stdoutText.contains("secret"))
                #expect(result.stderr.contains("not UTF-8"), "\(result.stderr)")
            }
        }
    }

    @Test func whatReferencesMayHoldIsReadAsDocumented() throws {
        try CLIBackend.withVault { _ in
            // A field with & (only % ? # need escaping), a key of 5,000 bytes, and NUL in a template.
            _ = try cli(["-s", "web", "set", "entry"], input: "pw\nR&D login: amp-value\n")
            let field = try cli(["env", "--env", "X=keychain://web/entry?field=R&D login"])
            #expect(field.stdoutText == "export X='amp-value'\n", "\(field.stderr)")
            let long = String(repeating: "k", count: 5000)
            _ = try cli(["-s", "ci", "set", long], input: "v5000")
            let read = try cli(["env", "--env", "X=keychain://ci/\(long)"])
            #expect(read.stdoutText == "export X='v5000'\n", "\(read.stderr)")
            _ = try cli(["-s", "ci", "set", "--raw", "nul"], stdin: Data("ab\0cd".utf8))
            let nul = try cli(["inject"], input: "pw={{ keychain://ci/nul }}\n")
            #expect(nul.status == 65, "\(nul.stderr)")
            #expect(nul.stdout.isEmpty)
            // A quoted reference in a .env is a reference, not a mapping's mistake.
            let scratch = try ScratchDirectory("reference-dotenv")
            defer { scratch.remove() }
            try "B=literal\nA=\"keychain://ci/token\\t\"\n".write(
                toFile: scratch.path("a.env"), atomically: true, encoding: .utf8)
            let quoted = try cli(["env", "--env-file", scratch.path("a.env")])
            #expect(quoted.status == 1)
            #expect(!quoted.stderr.contains("A mapping names a secret"), "\(quoted.stderr)")
        }
    }

    /// A backend's failure while reading a reference names the reference's place, with its code.
    @Test func aBackendFailureNamesTheReference() throws {
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "ci", "set", "token"], input: "x")
            let wrong = try cli(
                ["exec", "--", "true"],
                extra: ["KEYCHAIN_PASSPHRASE": "wrong", "MY_DB_PASSWORD": "keychain://ci/token"])
            #expect(wrong.status == 77)
            #expect(wrong.stderr.hasPrefix("keychain-cli: $MY_DB_PASSWORD: "), "\(wrong.stderr)")
        }
    }

    /// zsh's prompt aliases and configuration that runs programs are refused from --from.
    @Test func fromRefusesZshPromptsAndConfigurationThatRunsPrograms() throws {
        try CLIBackend.withVault { _ in
            for key in ["prompt", "rprompt", "readnullcmd", "kubeconfig", "aws-config-file", "cc", "gtk-modules"] {
                let s = uniqueService()
                _ = try cli(["-s", s, "set", key], input: "$(touch /tmp/pwned)")
                let result = try cli(["env", "--from", s])
                #expect(result.status == 65, "\(key): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
        }
    }
}
