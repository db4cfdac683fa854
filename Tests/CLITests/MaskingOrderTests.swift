import Foundation
import TestSupport
import Testing

/// Issue 58's attack on masked output, end to end: the runner's forms and the spellings that were
/// missed, the order of stdout and stderr on one pipe or file, a secret written slowly, a prompt.
@Suite("exec: masking's forms, order and holds, after issue 58", .keyringSession)
struct MaskingOrderTests {
    /// The forms GitHub's runner masks and encoders write, printed by a program: none shows;
    /// the `::add-mask::` lines carry only pieces safe to register.
    @Test func theRunnersFormsAndCommonEncodersAreMasked() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: #"C:\it's "a" <b> & c~d*e!f"#)
            _ = try cli(["-s", s, "set", "kube"], input: "users:\n  - name: ci\n    token: kube-token-0042\n")
            _ = try cli(["-s", s, "set", "short"], input: "  xy  \rlonger-piece")
            let script = #"""
                import base64, json, os, urllib.parse
                v, kube = os.environ["V"], os.environ["K"]
                print(v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&apos;"))
                print(v.replace("'", "''"))
                print(v.replace('"', '\\"'))
                print("".join(c if c.isalnum() or c in "-._*" else "+" if c == " " else "%%%02X" % ord(c) for c in v))
                print("".join("\\u%04X" % ord(c) if c in "\"'+`<>&" else "\\\\" if c == "\\" else c for c in v))
                print("    token: kube-token-0042".strip())
                print(base64.encodebytes(("prefix" + v * 4).encode()).decode().replace("\n", "\r\n"), end="")
                print("end")
                """#
            let result = try cli(
                [
                    "-s", s, "exec", "--env", "V=k", "--env", "K=kube", "--env", "S=short", "--", "/usr/bin/python3",
                    "-c", script,
                ],
                extra: ["GITHUB_ACTIONS": "true"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdoutText.components(separatedBy: "\n")
            #expect(lines.prefix(6) == ["***", "***", "***", "***", "***", "***"], "\(result.stdoutText)")
            for shift in 0...2 {
                let encoded = Data(#"C:\it's "a" <b> & c~d*e!f"#.utf8.dropFirst(shift)).base64EncodedString()
                #expect(!result.stdoutText.contains(encoded.prefix(12)), "\(result.stdoutText)")
            }
            #expect(result.stdoutText.hasSuffix("\r\nend\n"))
            #expect(result.stderr.contains("::add-mask::longer-piece\n"), "\(result.stderr)")
            #expect(!result.stderr.contains("::add-mask::  xy") && !result.stderr.contains("::add-mask::xy"))
        }
    }

    /// stdout and stderr on one pipe (`2>&1 | tee`) or one file (`> log 2>&1`): the lines keep
    /// the order the command wrote them in, as on a terminal, and are masked.
    @Test func onePipeOrFileForBothKeepsTheOrder() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "ordered-secret")
            let command = #"i=0; while [ $i -lt 100 ]; do echo "out $i"; echo "err $i $V" >&2; i=$((i+1)); done"#
            let expected = (0..<100).map { "out \($0)\nerr \($0) ***\n" }.joined()
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            environment["S"] = s
            environment["C"] = command
            let piped = try runProcess(
                "/bin/sh", ["-c", #""$KC" -s "$S" exec --env V=k -- sh -c "$C" 2>&1 | cat"#], environment: environment)
            #expect(piped.stdoutText == expected, "\(piped.stdoutText.prefix(200))")
            let log = FileManager.default.temporaryDirectory.appendingPathComponent("kc-log-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: log) }
            environment["LOG"] = log
            let filed = try runProcess(
                "/bin/sh", ["-c", #""$KC" -s "$S" exec --env V=k -- sh -c "$C" > "$LOG" 2>&1"#],
                environment: environment)
            #expect(filed.status == 0, "\(filed.stderr)")
            #expect(try String(contentsOfFile: log, encoding: .utf8) == expected)
        }
    }

    /// A secret written two bytes at a time, 0.1 s apart, is masked whole (the hold lasts as
    /// long as four or more bytes of it are open); a prompt that could begin a secret (fewer
    /// than four bytes of one) shows while the command waits for its answer.
    @Test func aSlowSecretIsMaskedAndAPromptShows() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "slow"], input: "slowly-written-secret")
            _ = try cli(["-s", s, "set", "colon"], input: ":colon-secret")
            let slowly = """
                import os, sys, time
                text = b"> " + os.environ["V"].encode() + b"\\n"
                for i in range(0, len(text), 2):
                    sys.stdout.buffer.write(text[i:i + 2]); sys.stdout.flush(); time.sleep(0.1)
                """
            let slow = try cli(["-s", s, "exec", "--env", "V=slow", "--", "/usr/bin/python3", "-c", slowly])
            #expect(slow.stdoutText == "> ***\n", "\(slow.stderr)")
            let harness = """
                import os, select, subprocess, sys
                p = subprocess.Popen([os.environ["KC"], "-s", sys.argv[1], "exec", "--env", "V=colon", "--", "sh", "-c",
                                      'printf "name:"; read x; echo "got $x"'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                seen = b""
                while not seen.endswith(b"name:") and select.select([p.stdout], [], [], 30)[0]:
                    seen += os.read(p.stdout.fileno(), 100)
                p.stdin.write(b"bob\\n"); p.stdin.close()
                print((seen + p.stdout.read()).decode(), end=""); p.wait()
                """
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            let prompt = try runProcess("/usr/bin/python3", ["-c", harness, s], environment: environment)
            #expect(prompt.stdoutText == "name:got bob\n", "\(prompt.stderr)")
        }
    }
}
