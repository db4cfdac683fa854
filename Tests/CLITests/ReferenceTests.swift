import Foundation
import TestSupport
import Testing

/// keychain://SERVICE/KEY references, resolved by exec (op run's rules) and printed by env for
/// eval, on every backend.
@Suite("References: exec, env", .keyringSession)
struct ReferenceTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("references") }

    /// Stores what the tests read: a token, an imported-style entry, and a key with / and ? in it.
    private func store(in s: String) throws {
        _ = try cli(["-s", s, "set", "token"], input: "tok-VALUE-1234")
        _ = try cli(["-s", s, "set", "entry"], input: "entry-password\nusername: alice-the-user\n")
        _ = try cli(["-s", s, "set", "dir/we?ird"], input: "weird-VALUE-5678")
    }

    @Test(arguments: CLIBackend.allCases)
    func aDotEnvMixesLiteralsAndReferences(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            try store(in: s)
            let file = scratch.path("\(backend).env")
            try """
            # the app's settings
            HOST=localhost
            export GREETING="hello $USER"
            TOKEN=keychain://\(s)/token
            USERNAME="keychain://\(s)/entry?field=username"
            WEIRD=keychain://\(s)/dir/we%3Fird

            """.write(toFile: file, atomically: true, encoding: .utf8)
            let script = #"printf '%s|%s|%s|%s|%s' "$HOST" "$GREETING" "$TOKEN" "$USERNAME" "$WEIRD""#
            let plain = try cli(["exec", "--no-mask", "--env-file", file, "--", "sh", "-c", script])
            #expect(plain.status == 0, "\(plain.stderr)")
            #expect(plain.stdoutText == "localhost|hello $USER|tok-VALUE-1234|alice-the-user|weird-VALUE-5678")
            // Masked: what was read is hidden, the literals are not.
            let masked = try cli(["exec", "--env-file", file, "--", "sh", "-c", script])
            #expect(masked.stdoutText == "localhost|hello $USER|***|***|***", "\(masked.stderr)")
        }
    }

    /// op run's rule: a variable whose whole value is a reference is read; one that holds a
    /// reference further in is left alone; a mapping of the same name wins; --no-references
    /// passes everything on as it is.
    @Test(arguments: CLIBackend.allCases)
    func theInheritedEnvironmentFollowsOpRunsRule(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            try store(in: s)
            let environment = [
                "WHOLE": "keychain://\(s)/token", "MID": "see keychain://\(s)/token", "MAPPED": "keychain://\(s)/entry",
            ]
            let script = #"printf '%s|%s|%s' "$WHOLE" "$MID" "$MAPPED""#
            let resolved = try cli(
                ["-s", s, "exec", "--no-mask", "--env", "MAPPED=\(s)/dir/we?ird", "--", "sh", "-c", script],
                extra: environment)
            #expect(resolved.status == 0, "\(resolved.stderr)")
            #expect(resolved.stdoutText == "tok-VALUE-1234|see keychain://\(s)/token|weird-VALUE-5678")
            // With no mapping at all, the environment's references are enough for exec.
            let alone = try cli(["exec", "--", "sh", "-c", #"printf %s "$WHOLE""#], extra: environment)
            #expect(alone.status == 0, "\(alone.stderr)")
            #expect(alone.stdoutText == "***")
            let off = try cli(
                ["exec", "--no-references", "--no-mask", "--env", "T=\(s)/token", "--", "sh", "-c", script],
                extra: environment)
            #expect(off.stdoutText == "keychain://\(s)/token|see keychain://\(s)/token|keychain://\(s)/entry")
        }
    }

    /// A reference that cannot be read stops exec before the command runs, naming the variable.
    @Test(arguments: CLIBackend.allCases)
    func anUnreadableReferenceRunsNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            try store(in: s)
            let marker = scratch.path("ran-\(backend)")
            let command = ["--", "sh", "-c", "touch '\(marker)'"]
            let cases: [([String: String], [String], Int32, String)] = [
                (["DB": "keychain://\(s)/absent"], [], 1, "$DB: no secret named 'absent' in service '\(s)'"),
                (
                    ["DB": "keychain://\(s)/entry?field=pin"], [], 1,
                    "$DB: the secret 'entry' of service '\(s)' has no field 'pin'"
                ),
                (["DB": "keychain://\(s)/a%zz"], [], 64, "$DB: the reference has a % in its key"),
                (["DB": "keychain://\(s)"], [], 64, "$DB: the reference should be keychain://SERVICE/KEY"),
                ([:], ["--env", "X=keychain://\(s)/k#x"], 64, "--env X: the reference has a #"),
            ]
            for (environment, arguments, status, words) in cases {
                let result = try cli(["exec"] + arguments + command, extra: environment)
                #expect(result.status == status, "\(environment) \(arguments): \(result.stderr)")
                #expect(result.stderr.contains(words), "\(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
            }
        }
    }

    /// inject takes the same references: a field, escapes, and a / in the key as it always did.
    @Test(arguments: CLIBackend.allCases)
    func injectReadsTheSameReferences(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            try store(in: s)
            let template = "u: {{ keychain://\(s)/entry?field=username }}\nw: {{ keychain://\(s)/dir/we%3Fird }}\n"
            let result = try cli(["inject"], input: template)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "u: alice-the-user\nw: weird-VALUE-5678\n")
            let unescaped = try cli(["inject"], input: "{{ keychain://\(s)/dir/we?ird }}")
            #expect(unescaped.status == 64, "a ? in a key is written %3F: \(unescaped.stderr)")
            #expect(unescaped.stderr.contains("takes one ?field=NAME"), "\(unescaped.stderr)")
        }
    }

    /// env prints what eval reads back exactly, in each shell, and nothing when one fails.
    @Test(arguments: CLIBackend.allCases)
    func envPrintsLinesEachShellEvaluatesToTheValues(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let nasty = "a$(touch pwned)`id`'\"\\ \n\u{1B}[31m é end"
            _ = try cli(["-s", s, "set", "nasty"], input: nasty)
            let file = scratch.path("\(backend)-env.env")
            try "N=keychain://\(s)/nasty\nL='literal $(x)'\n".write(toFile: file, atomically: true, encoding: .utf8)
            for (shell, dialect, reader) in [
                ("/bin/dash", "posix", #"printf '%s|%s' "$N" "$L""#),
                ("/bin/bash", "bash", #"printf '%s|%s' "$N" "$L""#),
                ("/usr/bin/zsh", "zsh", #"printf '%s|%s' "$N" "$L""#),
                ("/usr/bin/fish", "fish", "printf '%s|%s' $N $L"),
            ] {
                let lines = try cli(["env", "--env-file", file, "--shell", dialect])
                #expect(lines.status == 0, "\(lines.stderr)")
                let script = scratch.path("\(backend)-\(dialect).sh")
                try (lines.stdout + Data(reader.utf8)).write(to: URL(fileURLWithPath: script))
                let evaluated = try runProcess(
                    shell, [script], environment: ["PATH": "/usr/bin:/bin", "HOME": scratch.url.path])
                #expect(evaluated.stdoutText == nasty + "|literal $(x)", "\(dialect): \(evaluated.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: scratch.path("pwned")))
            let missing = try cli(["env", "--env", "N=\(s)/nasty", "--env", "M=keychain://\(s)/absent"])
            #expect(missing.status == 1)
            #expect(missing.stdout.isEmpty, "nothing is printed when one variable cannot be read")
            #expect(missing.stderr.contains("--env M: no secret named 'absent'"), "\(missing.stderr)")
        }
    }

    /// The direnv recipe of docs/recipes: an .envrc that evals env's lines loads the secrets into
    /// what direnv runs, and one that cannot be read loads nothing.
    @Test(arguments: CLIBackend.allCases)
    func direnvLoadsAnEnvrcThatEvalsEnv(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            try store(in: s)
            let project = scratch.url.appendingPathComponent("project-\(backend)")
            try FileManager.default.createDirectory(at: project, withIntermediateDirectories: true)
            try "TOKEN=keychain://\(s)/token\nHOST=db.local\n".write(
                to: project.appendingPathComponent(".env.keychain"), atomically: true, encoding: .utf8)
            let envrc = project.appendingPathComponent(".envrc")
            try "eval \"$('\(keychainCLIPath)' env --env-file .env.keychain --shell bash)\"\n".write(
                to: envrc, atomically: true, encoding: .utf8)
            var environment = cliEnvironment()
            environment["XDG_DATA_HOME"] = scratch.path("direnv-data")
            environment["XDG_CONFIG_HOME"] = scratch.path("direnv-config")
            let allowed = try runProcess("/usr/bin/direnv", ["allow", project.path], environment: environment)
            #expect(allowed.status == 0, "\(allowed.stderr)")
            let script = #"printf '%s|%s' "$TOKEN" "$HOST""#
            let loaded = try runProcess(
                "/usr/bin/direnv", ["exec", project.path, "sh", "-c", script], environment: environment)
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(loaded.stdoutText == "tok-VALUE-1234|db.local")
            // A reference that cannot be read: env prints nothing, so direnv sets nothing.
            try "TOKEN=keychain://\(s)/absent\nHOST=db.local\n".write(
                to: project.appendingPathComponent(".env.keychain"), atomically: true, encoding: .utf8)
            _ = try runProcess("/usr/bin/direnv", ["allow", project.path], environment: environment)
            let failed = try runProcess(
                "/usr/bin/direnv", ["exec", project.path, "sh", "-c", script], environment: environment)
            #expect(failed.stdoutText == "|", "\(failed.stderr)")
            #expect(failed.stderr.contains("no secret named 'absent'"), "\(failed.stderr)")
        }
    }
}
