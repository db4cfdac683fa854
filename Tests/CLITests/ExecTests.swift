import Foundation
import TestSupport
import Testing

@Suite("exec: secrets in a child's environment", .keyringSession)
struct ExecTests {
    @Test(arguments: CLIBackend.allCases)
    func childSeesTheSecretsInItsEnvironmentButNotInItsArguments(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            _ = try cli(["-s", s, "set", "token"], input: "SECRET-ONE")
            _ = try cli(["-s", other, "set", "npm"], input: "SECRET-TWO")
            let script = #"printf '%s|%s\n' "$A" "$B"; tr '\0' ' ' < /proc/$$/cmdline"#
            let result = try cli([
                "-s", s, "exec", "--no-mask", "--env", "A=token", "--env", "B=\(other)/npm", "--", "sh", "-c", script,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n")
            #expect(lines.first == "SECRET-ONE|SECRET-TWO")
            // (A require: lines[1] of a shorter output would end the whole test process.)
            try #require(lines.count == 2, "\(result.stdoutText)")
            #expect(!lines[1].contains("SECRET"), "a secret is in the child's cmdline: \(lines[1])")
            #expect(lines[1].hasPrefix("sh -c "))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func exitStatusStdinAndSignalsAreTheChildsOwn(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "v")
            let exited = try cli(["-s", s, "exec", "--env", "K=k", "--", "sh", "-c", "exit 7"])
            #expect(exited.status == 7)
            #expect(!exited.signaled)
            let piped = try cli(["-s", s, "exec", "--env", "K=k", "--", "cat"], input: "through stdin")
            #expect(piped.stdoutText == "through stdin")
            // The test runner's children start with most signals blocked: unblock, then die of one.
            let suicide =
                "import os, signal; signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1]); "
                + "os.kill(os.getpid(), signal.SIGUSR1)"
            let killed = try cli(["-s", s, "exec", "--env", "K=k", "--", "/usr/bin/python3", "-c", suicide])
            #expect(killed.signaled)
            #expect(killed.status == SIGUSR1)
        }
    }

    @Test(arguments: ["SIG_DFL", "SIG_IGN"])
    func theCommandGetsTheSIGPIPEDispositionKeychainCLIGot(disposition: String) throws {
        // GDBus ignores SIGPIPE inside keychain-cli; the command must get what keychain-cli was
        // started with. Python sets it, then becomes keychain-cli.
        let s = uniqueService()
        _ = try cli(["-s", s, "set", "k"], input: "v")
        let arguments = [
            keychainCLIPath, "-s", s, "exec", "--env", "K=k", "--", "/bin/sed", "-n", "s/^SigIgn:[[:space:]]*//p",
            "/proc/self/status",
        ]
        let launcher =
            "import os, signal, sys; signal.signal(signal.SIGPIPE, signal.\(disposition)); os.execv(sys.argv[1], sys.argv[1:])"
        let result = try runProcess(
            "/usr/bin/python3", ["-c", launcher] + arguments, environment: cliEnvironment())
        #expect(result.status == 0, "\(result.stderr)")
        let mask = try #require(UInt64(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines), radix: 16))
        #expect((mask & (1 << UInt64(SIGPIPE - 1)) != 0) == (disposition == "SIG_IGN"))
        if disposition == "SIG_DFL" {
            let pipeline = try cli(["-s", s, "exec", "--env", "K=k", "--", "sh", "-c", "yes | head -1"], timeout: 20)
            #expect(pipeline.stdoutText == "y\n")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func aMissingOrBinarySecretRunsNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "present"], input: "v")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0x00, 0xff]))
            let marker = FileManager.default.temporaryDirectory.appendingPathComponent("kc-exec-\(UUID())").path
            let missing = try cli(["-s", s, "exec", "--env", "A=present", "--env", "B=absent", "--", "touch", marker])
            #expect(missing.status == 1)
            #expect(missing.stderr.contains("no secret named 'absent'"))
            let binary = try cli(["-s", s, "exec", "--env", "A=bin", "--", "touch", marker])
            #expect(binary.status == 65)
            #expect(
                binary.stderr.contains("is binary (not UTF-8 text, or a NUL byte) and cannot go in the environment"))
            #expect(!FileManager.default.fileExists(atPath: marker), "the command ran although a secret failed")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func envFileMappingsWithCommentsAndBadLines(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "a"], input: "va")
            _ = try cli(["-s", s, "set", "b"], input: "vb")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("kc-\(UUID()).env")
            defer { try? FileManager.default.removeItem(at: file) }
            try "# deploy secrets\n\nA=a\n   B=\(s)/b  \n".write(to: file, atomically: true, encoding: .utf8)
            let good = try cli(["-s", s, "exec", "--env-file", file.path, "--", "sh", "-c", #"printf %s "$A$B""#])
            #expect(good.status == 0, "\(good.stderr)")
            #expect(good.stdoutText == "vavb")
            try "A=a\nthis is not a mapping\n".write(to: file, atomically: true, encoding: .utf8)
            let bad = try cli(["-s", s, "exec", "--env-file", file.path, "--", "true"])
            #expect(bad.status == 64)
            #expect(bad.stderr == "keychain-cli: \(file.path):2: expected NAME=KEY or NAME=SERVICE/KEY\n")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func usageMistakesExit64AndAMissingCommand127(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "v")
            for arguments in [
                ["exec", "--env", "1BAD=k", "--", "true"], ["exec", "--env", "A-B=k", "--", "true"],
                ["exec", "--env", "NOEQUALS", "--", "true"], ["exec", "--env", "A=k", "--env", "A=k", "--", "true"],
                ["exec", "--", "true"], ["exec", "--env", "A=k"], ["exec", "--env", "A=/k", "--", "true"],
            ] {
                let result = try cli(["-s", s] + arguments)
                #expect(result.status == 64, "\(arguments): \(result.stderr)")
                #expect(result.stderr.hasPrefix("keychain-cli: "))
            }
            let notFound = try cli(["-s", s, "exec", "--env", "A=k", "--", "no-such-command-kc"])
            #expect(notFound.status == 127)
            #expect(notFound.stderr.contains("cannot find the command 'no-such-command-kc'"))
        }
    }

    /// A signal the command sends keychain-cli, its parent, is not passed back to it (it was: the
    /// command got its own SIGTERM), and keychain-cli still ends as the command ends.
    @Test func aSignalTheCommandSendsKeychainCLIIsNotSentBack() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "sent-back-secret")
            let child = """
                import os, signal, time
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                got = []
                signal.signal(signal.SIGTERM, lambda n, f: got.append(n))
                os.kill(os.getppid(), signal.SIGTERM)
                time.sleep(0.5)
                print("signals", len(got), flush=True)
                """
            let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "/usr/bin/python3", "-c", child])
            #expect(result.status == 0 && result.stdoutText == "signals 0\n", "\(result.stdoutText) \(result.stderr)")
        }
    }
}
