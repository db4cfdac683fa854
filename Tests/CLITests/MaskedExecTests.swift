import Foundation
import TestSupport
import Testing

/// `exec` masks what its command writes: every secret it was given, in the forms GitHub's runner
/// masks and the ones programs print most, wherever the command's writes split them.
@Suite("exec: masked output", .keyringSession)
struct MaskedExecTests {
    static let secret = "s3cr3t/Value+with \"quotes\" & <tags>"

    /// The secret whole, base64 at the three offsets, JSON-escaped (as Python and Go write it),
    /// URL-encoded, on stdout and on stderr: none of it is left, the rest of the output is.
    @Test(arguments: CLIBackend.allCases)
    func everyFormOfASecretIsMaskedOnStdoutAndStderr(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: Self.secret)
            let script = """
                import base64, json, os, sys, urllib.parse
                v = os.environ["V"]
                b = v.encode()
                print("whole:", v)
                for prefix in (b"", b"x", b"xy"):
                    print("b64:", base64.b64encode(prefix + b).decode())
                print("json:", json.dumps({"v": v}))
                print("url:", urllib.parse.quote(v, safe=""), urllib.parse.quote_plus(v))
                print("err:", v, file=sys.stderr)
                print("done")
                """
            let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "/usr/bin/python3", "-c", script])
            #expect(result.status == 0, "\(result.stderr)")
            let output = result.stdoutText + result.stderr
            for form in Self.forms(of: Self.secret) {
                #expect(!output.contains(form), "\(form) is in the output: \(output)")
            }
            #expect(result.stdoutText.hasPrefix("whole: ***\n"), "\(result.stdoutText)")
            #expect(result.stdoutText.contains("json: {\"v\": \"***\"}\n"))
            #expect(result.stdoutText.hasSuffix("done\n"))
            #expect(result.stderr.contains("err: ***\n"), "\(result.stderr)")
        }
    }

    /// What a reader could decode: the encoded forms tests check for.
    static func forms(of value: String) -> [String] {
        let bytes = Data(value.utf8)
        return [value, value.replacingOccurrences(of: "\"", with: "\\\""), "s3cr3t", "Value%2Bwith"]
            + [0, 1, 2].map { String(bytes.dropFirst($0).base64EncodedString().prefix(12)) }
    }

    /// A secret written in two parts with a pause between, or byte by byte, is still masked;
    /// output that only begins like one is written unchanged once it is clear.
    @Test func aSecretSplitAcrossWritesIsMasked() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "split-secret-value")
            let script = """
                import os, sys, time
                v = os.environ["V"].encode()
                out = sys.stdout.buffer
                out.write(b"a " + v[:7]); out.flush(); time.sleep(0.2)
                out.write(v[7:] + b" b\\n"); out.flush()
                for byte in v: out.write(bytes([byte])); out.flush()
                out.write(b"\\nsplit-secret-valu"); out.flush(); time.sleep(0.2)
                out.write(b"E split-sec\\n"); out.flush()
                """
            let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "/usr/bin/python3", "-c", script])
            #expect(result.stdoutText == "a *** b\n***\nsplit-secret-valuE split-sec\n", "\(result.stderr)")
        }
    }

    /// Secrets that overlap, contain one another, or look like the mask: no part of any shows.
    @Test func overlappingAndNestedSecretsLeaveNoPartShowing() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let secrets = ["abcdef12", "ef12ghij", "token-1234", "token-12345678", "****", "ab**"]
            for (index, value) in secrets.enumerated() { _ = try cli(["-s", s, "set", "k\(index)"], input: value) }
            let mappings = secrets.indices.flatMap { ["--env", "V\($0)=k\($0)"] }
            let text = "1 abcdef12ghij 2 token-12345678 3 token-1234 4 ****** 5 ab**** 6 abcde\n"
            let result = try cli(["-s", s, "exec"] + mappings + ["--", "printf", "%s", text])
            #expect(result.stdoutText == "1 *** 2 *** 3 *** 4 *** 5 *** 6 abcde\n", "\(result.stderr)")
        }
    }

    /// Binary output passes byte for byte, NULs and all, but for the masked spans.
    @Test func binaryOutputPassesByteForByte() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "bin-secret")
            var noise = Data((0..<(3 << 20)).map { _ in UInt8.random(in: 0...255) })
            noise.replaceSubrange(1000..<1010, with: Data("bin-secret".utf8))
            noise.replaceSubrange(2_000_000..<2_000_010, with: Data("bin-secret".utf8))
            noise[5] = 0
            let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "cat"], stdin: noise)
            var expected = noise
            expected.replaceSubrange(2_000_000..<2_000_010, with: Data("***".utf8))
            expected.replaceSubrange(1000..<1010, with: Data("***".utf8))
            #expect(result.status == 0)
            #expect(result.stdout == expected, "\(result.stdout.count) bytes, \(expected.count) expected")
        }
    }

    /// A multi-line secret is masked whole and line by line; GitHub's runner is told every line first; a
    /// secret under 4 characters is named in a warning, never shown in it, and not masked.
    @Test func linesAreMaskedTheRunnerIsToldAndShortSecretsAreNamed() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "multi"], input: "first-line\nsecond%line\n")
            _ = try cli(["-s", s, "set", "short"], input: "ab")
            let result = try cli(
                [
                    "-s", s, "exec", "--env", "M=multi", "--env", "S=short", "--", "sh", "-c",
                    #"echo "$M"; echo "S=$S""#,
                ],
                extra: ["GITHUB_ACTIONS": "true"])
            #expect(result.stdoutText == "***\nS=ab\n", "\(result.stderr)")
            let oneLine = try cli(["-s", s, "exec", "--env", "M=multi", "--", "sh", "-c", #"echo "$M" | tail -1"#])
            #expect(oneLine.stdoutText == "***\n", "a line printed alone: \(oneLine.stderr)")
            #expect(
                result.stderr.hasPrefix("::add-mask::first-line\n::add-mask::second%25line\nkeychain-cli:"),
                "\(result.stderr)")
            #expect(!result.stderr.contains("::add-mask::ab"), "a short secret would mangle the runner's log")
            #expect(result.stderr.contains("$S is shorter than 4 characters and is not masked"))
            #expect(!result.stderr.contains("ab is") && !result.stderr.contains("'ab'"))
            let unmasked = try cli(["-s", s, "exec", "--no-mask", "--env", "M=multi", "--", "sh", "-c", #"echo "$M""#])
            #expect(unmasked.stdoutText == "first-line\nsecond%line\n")
        }
    }

    /// The exit status is the command's; a command killed by a signal kills keychain-cli with it;
    /// signals sent to keychain-cli (by a process, or to a command of its own process group when
    /// there is no terminal) reach the command once.
    @Test func exitStatusAndSignalsAreTheCommands() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "signal-secret")
            #expect(try cli(["-s", s, "exec", "--env", "V=k", "--", "sh", "-c", "exit 7"]).status == 7)
            let harness = """
                import os, signal, subprocess, sys, time
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                for name in ("SIGTERM", "SIGINT", "SIGHUP"):
                    child = subprocess.Popen(
                        [os.environ["KC"], "-s", sys.argv[1], "exec", "--env", "V=k", "--", "/usr/bin/python3", "-c",
                         "import signal, sys, time, os\\n"
                         "watched = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}\\n"
                         "signal.pthread_sigmask(signal.SIG_BLOCK, watched)\\n"
                         "print('ready', os.environ['V'], flush=True)\\n"
                         "first = signal.Signals(signal.sigwaitinfo(watched).si_signo)\\n"
                         "time.sleep(0.2)  # (a second delivery would come within this: kept pending)\\n"
                         "print(first.name, 1 + len(signal.sigpending() & watched), flush=True)\\n"
                         "sys.exit(3)"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
                    ready = child.stdout.readline()
                    child.send_signal(getattr(signal, name))
                    print(name, ready.decode().strip(), child.stdout.read().decode().strip(), child.wait())
                killed = subprocess.run([os.environ["KC"], "-s", sys.argv[1], "exec", "--env", "V=k", "--",
                                         "sh", "-c", "kill -TERM $$"])
                print("killed", killed.returncode)
                """
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            let result = try runProcess(
                "/usr/bin/python3", ["-c", harness, s], environment: environment, timeout: 60)
            #expect(
                result.stdoutText == """
                    SIGTERM ready *** SIGTERM 1 3
                    SIGINT ready *** SIGINT 1 3
                    SIGHUP ready *** SIGHUP 1 3
                    killed -15

                    """, "\(result.stderr)")
        }
    }

    /// `serve -- COMMAND` masks what its command prints: the secrets the backend held when it
    /// started, and those a client stores or reads while it runs (before the client is answered).
    @Test(arguments: [CLIBackend.vault, .openbao])
    func serveMasksTheBackendsSecretsAndThoseThatPassThroughIt(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "held"], input: "held-before-start")
            let script = """
                secret-tool lookup service \(s) username held; echo
                printf 'stored-while-running' | secret-tool store --label=n service \(s) username new
                echo "new: stored-while-running"; echo "err held-before-start" >&2
                """
            let masked = try cli(["serve", "--", "sh", "-c", script], session: nil)
            #expect(masked.status == 0, "\(masked.stderr)")
            #expect(masked.stdoutText == "***\nnew: ***\n", "\(masked.stderr)")
            #expect(masked.stderr == "err ***\n")
            let plain = try cli(["serve", "--no-mask", "--", "sh", "-c", script], session: nil)
            #expect(plain.stdoutText == "held-before-start\nnew: stored-while-running\n", "\(plain.stderr)")
        }
    }
}
