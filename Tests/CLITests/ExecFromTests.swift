import Foundation
import TestSupport
import Testing

/// `exec --from SERVICE`: a whole service in the environment, named as `export --format env`
/// names it, and a name two secrets would take refused before anything runs.
@Suite("exec --from: a whole service at once", .keyringSession)
struct ExecFromTests {
    @Test(arguments: CLIBackend.allCases)
    func everyKeyOfTheServiceIsSetAndFiltersAndPrefixApply(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            for (key, value) in ["db-password": "pw with spaces", "api-key": "k3y", "debug.token": "dbg"] {
                #expect(try cli(["-s", s, "set", key], input: value).status == 0)
            }
            _ = try cli(["-s", other, "set", "npm"], input: "npm-secret")
            let script = #"env | grep -E '^(DB_PASSWORD|API_KEY|DEBUG_TOKEN|NPM|CI_[A-Z_]*)=' | sort"#
            let all = try cli(["exec", "--no-mask", "--from", s, "--from", other, "--", "sh", "-c", script])
            #expect(all.status == 0, "\(all.stderr)")
            #expect(all.stdoutText == "API_KEY=k3y\nDB_PASSWORD=pw with spaces\nDEBUG_TOKEN=dbg\nNPM=npm-secret\n")
            let filtered = try cli([
                "exec", "--no-mask", "--from", s, "--only", "*-*", "--except", "api-*", "--prefix", "CI_", "--", "sh",
                "-c",
                script,
            ])
            #expect(filtered.stdoutText == "CI_DB_PASSWORD=pw with spaces\n", "\(filtered.stderr)")
        }
    }

    /// Never last-one-wins: two keys of a service, or a --from key and an --env mapping, that
    /// take one name stop everything (65), and the command does not run.
    @Test(arguments: CLIBackend.allCases)
    func aNameTwoSecretsWouldTakeIsRefusedBeforeAnythingRuns(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "api-key"], input: "one")
            _ = try cli(["-s", s, "set", "api_key"], input: "two")
            _ = try cli(["-s", s, "set", "db"], input: "three")
            let marker = FileManager.default.temporaryDirectory.appendingPathComponent("kc-from-\(UUID())").path
            let collision = try cli(["exec", "--from", s, "--", "touch", marker])
            #expect(collision.status == 65)
            #expect(
                collision.stderr.contains("the keys 'api-key' and 'api_key' both become API_KEY"), "\(collision.stderr)"
            )
            let withMapping = try cli([
                "-s", s, "exec", "--from", s, "--except", "api_*", "--env", "DB=db", "--", "touch", marker,
            ])
            #expect(withMapping.status == 65)
            #expect(withMapping.stderr.contains("DB would be set by --env DB and by --from"), "\(withMapping.stderr)")
            #expect(!FileManager.default.fileExists(atPath: marker))
            for secret in ["one", "two", "three"] {
                #expect(!(collision.stderr + withMapping.stderr).contains("'\(secret)'"))
            }
        }
    }

    @Test func anEmptyOrBinaryServiceRunsNothing() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let missing = try cli(["exec", "--from", s, "--", "true"])
            #expect(missing.status == 1 && missing.stderr.contains("gives no secret"), "\(missing.stderr)")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255]))
            _ = try cli(["-s", s, "set", "text"], input: "t")
            let binary = try cli(["exec", "--from", s, "--", "true"])
            #expect(binary.status == 65 && binary.stderr.contains("Leave it out with --except"), "\(binary.stderr)")
            #expect(try cli(["exec", "--from", s, "--except", "bin", "--", "true"]).status == 0)
            let filteredOut = try cli(["exec", "--from", s, "--only", "nothing*", "--", "true"])
            #expect(filteredOut.status == 1 && filteredOut.stderr.contains("that --only and --except let through"))
            #expect(try cli(["exec", "--prefix", "X_", "--env", "A=text", "--", "true"]).status == 64)
            #expect(try cli(["exec", "--from", s, "--prefix", "1X", "--", "true"]).status == 64)
        }
    }

    /// Whoever can add a key to the service must not choose what the command runs: a key that
    /// would set PATH, LD_PRELOAD or BASH_ENV is refused (65) unless --prefix or --env says so;
    /// a service given twice is read once; a collision names no token-shaped key.
    @Test func keysThatWouldChangeWhatRunsAreRefused() throws {
        try CLIBackend.withVault { _ in
            let marker = FileManager.default.temporaryDirectory.appendingPathComponent("kc-from-\(UUID())").path
            for key in ["path", "ld-preload", "bash-env", "keychain-passphrase"] {
                let s = uniqueService()
                _ = try cli(["-s", s, "set", key], input: "/tmp/evil")
                let result = try cli(["exec", "--from", s, "--", "touch", marker])
                #expect(result.status == 65, "\(key): \(result.stderr)")
                #expect(result.stderr.contains("which changes what the command runs"), "\(result.stderr)")
                let prefixed = try cli([
                    "exec", "--no-mask", "--from", s, "--prefix", "APP_", "--", "sh", "-c", "env | grep ^APP_",
                ])
                #expect(prefixed.status == 0 && prefixed.stdoutText.hasSuffix("=/tmp/evil\n"), "\(prefixed.stderr)")
            }
            #expect(!FileManager.default.fileExists(atPath: marker))
            let s = uniqueService()
            let other = uniqueService()
            let token = "ghp_" + "R3alLook1ngT0kenValue0123456789abcd"
            for service in [s, other] { _ = try cli(["-s", service, "set", token], input: "v") }
            #expect(try cli(["exec", "--from", s, "--from", s, "--", "true"]).status == 0)
            let collision = try cli(["exec", "--from", s, "--from", other, "--", "true"])
            #expect(collision.status == 65)
            #expect(
                !collision.stderr.contains(token) && !collision.stderr.contains(token.uppercased()),
                "\(collision.stderr)")
        }
    }

    /// The variables that issue 58 found missing, and their families: each key is refused by
    /// --from (65, one line, the key and variable named, never the value), and the one a program
    /// of the key writer's choice ran through (GIT_EXTERNAL_DIFF, in `git diff`) runs it only when
    /// mapped explicitly with --env, which still works.
    @Test func gitSudoJavaLessAndShellVariablesAreRefusedByFrom() throws {
        try CLIBackend.withVault { _ in
            let scratch = try ScratchDirectory("from-git")
            defer { scratch.remove() }
            let marker = scratch.path("ran")
            let program = scratch.path("diff.sh")
            try Data("#!/bin/sh\ntouch '\(marker)'\n".utf8).write(to: URL(fileURLWithPath: program))
            chmod(program, 0o755)
            let keys = [
                "git-external-diff", "git-askpass", "git-editor", "git-pager", "git-proxy-command", "git-dir",
                "sudo-askpass", "jdk-java-options", "lessopen", "zdotdir", "glibc-tunables", "pythonwarnings",
                "node-repl-external-module", "perl5db", "bash-func-x", "npm-config-script-shell", "xdg-config-home",
                "viminit", "exinit", "lua-init", "phprc", "actions-allow-unsecure-commands", "github-env",
            ]
            for key in keys {
                let s = uniqueService()
                _ = try cli(["-s", s, "set", key], input: program)
                let result = try cli(["exec", "--from", s, "--", "touch", marker])
                let name = key.uppercased().replacingOccurrences(of: "-", with: "_")
                #expect(result.status == 65, "\(key): \(result.stderr)")
                #expect(result.stderr.contains("'\(key)' would set \(name), which changes what"), "\(result.stderr)")
                #expect(result.stderr.split(separator: "\n").count == 1 && !result.stderr.contains(program))
            }
            #expect(!FileManager.default.fileExists(atPath: marker))
            // In any case: npm reads npm_config_* so, and a prefix may make the name.
            let lower = uniqueService()
            _ = try cli(["-s", lower, "set", "script-shell"], input: program)
            let prefixed = try cli(["exec", "--from", lower, "--prefix", "npm_config_", "--", "touch", marker])
            #expect(prefixed.status == 65 && prefixed.stderr.contains("npm_config_SCRIPT_SHELL"), "\(prefixed.stderr)")
            // A token the runner gives steps is a secret like any other.
            let token = uniqueService()
            _ = try cli(["-s", token, "set", "github-token"], input: "t0ken-value")
            let passed = try cli(["exec", "--from", token, "--", "sh", "-c", "test -n \"$GITHUB_TOKEN\""])
            #expect(passed.status == 0, "\(passed.stderr)")
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "git-external-diff"], input: program)
            let repository = #"""
                cd "$0" && git init -q r && cd r && echo a > f && git add f && echo b > f && k=$1 && shift && "$k" "$@"
                """#
            let arguments = ["sh", "-c", repository, scratch.url.path, keychainCLIPath, "exec"]
            let refused = try runProcess(
                "/usr/bin/env", arguments + ["--from", s, "--", "git", "diff"], environment: cliEnvironment())
            #expect(refused.status == 65 && !FileManager.default.fileExists(atPath: marker), "\(refused.stderr)")
            let mapped = try runProcess(
                "/usr/bin/env",
                arguments + ["-s", s, "--env", "GIT_EXTERNAL_DIFF=git-external-diff", "--", "git", "diff"],
                environment: cliEnvironment())
            #expect(mapped.status == 0 && FileManager.default.fileExists(atPath: marker), "\(mapped.stderr)")
        }
    }
}
