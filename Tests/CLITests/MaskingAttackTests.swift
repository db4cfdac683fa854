import Foundation
import TestSupport
import Testing

/// What an outside attack on masked output and `--file` found, each as a fact: encoders'
/// spellings that were not masked, multi-line and CRLF secrets, two terminals, a full disk, a
/// runtime directory another user could rename in, the passphrase's credentials directory.
@Suite("exec: masking and --file, after an outside attack", .keyringSession)
struct MaskingAttackTests {
    /// Upper-case hex JSON escapes (.NET, Jackson), PHP's mix of `\/` and `\u00e9`, lower-case
    /// URL hex (curl), Python's quote() that keeps `/`: all masked.
    @Test func everyEncodersSpellingIsMasked() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "clé/secrète<42> & p@ss w0rd")
            let script = """
                import json, os, re, urllib.parse
                v = os.environ["V"]
                up = lambda s: re.sub(r"\\\\u([0-9a-f]{4})", lambda m: "\\\\u" + m.group(1).upper(), s)
                go = json.dumps(v).replace("<", "\\\\u003c").replace(">", "\\\\u003e").replace("&", "\\\\u0026")
                print(up(json.dumps(v)))
                print(json.dumps(v).replace("/", "\\\\/"))
                print(up(go))
                print(urllib.parse.quote_plus(v).lower())
                print(urllib.parse.quote(v))
                """
            let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "/usr/bin/python3", "-c", script])
            #expect(result.stdoutText == "\"***\"\n\"***\"\n\"***\"\n***\n***\n", "\(result.stderr)")
        }
    }

    /// A multi-line secret whose lines are all short is masked whole (with a warning that its
    /// lines alone are not); a CRLF secret of 4 scalars (one grapheme fewer) is masked; its
    /// add-mask lines carry no CR and split at CRLF.
    /// A run of blank lines (LF, or a progress bar's lone CRs) cost each position a look to the
    /// end of the run: 1 MiB of them did not pass exec or scan in 100 s (the second attack, on
    /// scan). Each position now looks at 10 bytes at most: 4 MiB pass well within the minute.
    @Test func aLongRunOfLineBreaksPassesInLinearTime() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "SuperSecretValue123")
            for byte in ["\\n", "\\r"] {
                let script = "head -c 4194304 /dev/zero | tr '\\0' '\(byte)'"
                let result = try cli(["-s", s, "exec", "--env", "V=k", "--", "sh", "-c", script], timeout: 60)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.stdout.count == 4_194_304)
                let scanned = try cli(["-s", s, "scan", "-"], stdin: result.stdout, timeout: 60)
                #expect(scanned.status == 0, "\(scanned.stderr)")
            }
        }
    }

    @Test func shortLinesCRLFAndScalarsAreCountedAsTheyAre() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "pins"], input: "123\n456\n789")
            _ = try cli(["-s", s, "set", "crlf"], input: "a\r\nb")
            _ = try cli(["-s", s, "set", "lines"], input: "first-line\r\nsecond-line\r\nab")
            let result = try cli(
                [
                    "-s", s, "exec", "--env", "P=pins", "--env", "C=crlf", "--env", "L=lines", "--", "sh", "-c",
                    #"printf '%s|%s|%s\n' "$P" "$C" "$L""#,
                ], extra: ["GITHUB_ACTIONS": "true"])
            #expect(result.stdoutText == "***|***|***\n", "\(result.stderr)")
            #expect(result.stderr.contains("some lines of $P are shorter than 4 characters"))
            #expect(result.stderr.hasPrefix("::add-mask::first-line\n::add-mask::second-line\n"), "\(result.stderr)")
            #expect(!result.stderr.contains("\r") && !result.stderr.contains("::add-mask::ab"))
        }
    }

    /// stdout and stderr on two different terminals: a pty for each, so each keeps its own.
    @Test func twoTerminalsKeepTheirOwnStreams() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "two-terminals")
            let harness = """
                import os, pty, select, subprocess, sys
                m1, s1 = pty.openpty(); m2, s2 = pty.openpty()
                p = subprocess.Popen([os.environ["KC"], "-s", sys.argv[1], "exec", "--env", "V=k", "--", "sh", "-c",
                                      'echo "out $V"; echo "err $V" >&2'], stdin=subprocess.DEVNULL, stdout=s1, stderr=s2)
                os.close(s1); os.close(s2); p.wait()
                def drain(m):
                    out = b""
                    while select.select([m], [], [], 0.5)[0]:
                        try:
                            chunk = os.read(m, 4096)
                        except OSError:
                            break
                        if not chunk:
                            break
                        out += chunk
                    return out
                print(repr(drain(m1)), repr(drain(m2)))
                """
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            let result = try runProcess("/usr/bin/python3", ["-c", harness, s], environment: environment)
            #expect(result.stdoutText == "b'out ***\\r\\n' b'err ***\\r\\n'\n", "\(result.stderr)")
        }
    }

    /// Output keychain-cli cannot write (a full disk) is never a success: 74, and a message.
    @Test func outputThatCannotBeWrittenExits74() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "full-disk")
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            environment["S"] = s
            let result = try runProcess(
                "/bin/sh", ["-c", #""$KC" -s "$S" exec --env V=k -- echo report > /dev/full; echo "status $?""#],
                environment: environment)
            #expect(result.stdoutText == "status 74\n", "\(result.stderr)")
            #expect(result.stderr.contains("cannot write the command's output (No space left on device)"))
        }
    }

    /// $XDG_RUNTIME_DIR that others could rename in (writable by all, not sticky) is passed
    /// over for /dev/shm; $CREDENTIALS_DIRECTORY that holds keychain-cli's passphrase is not
    /// passed on.
    @Test func aDirectoryOthersCouldChangeIsPassedOverAndThePassphraseIsWithheld() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "runtime-secret")
            let open = "/dev/shm/kc-test-open-\(UUID())"
            try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(atPath: open) }
            chmod(open, 0o777)
            let result = try cli(
                ["-s", s, "exec", "--file", "f=k", "--", "sh", "-c", #"dirname "$CREDENTIALS_DIRECTORY""#],
                extra: ["XDG_RUNTIME_DIR": open])
            #expect(result.stdoutText == "/dev/shm\n", "\(result.stderr)")
            let credentials = try ScratchDirectory("credentials")
            try Data("\(CLIBackend.passphrase)\n".utf8).write(
                to: credentials.url.appendingPathComponent("keychain-cli.passphrase"))
            var environment = cliEnvironment()
            environment["KEYCHAIN_PASSPHRASE"] = nil
            environment["CREDENTIALS_DIRECTORY"] = credentials.url.path
            let withheld = try runProcess(
                keychainCLIPath,
                ["-s", s, "exec", "--env", "V=k", "--", "sh", "-c", #"echo "${CREDENTIALS_DIRECTORY-unset} $V""#],
                environment: environment)
            #expect(withheld.stdoutText == "unset ***\n", "\(withheld.stderr)")
        }
    }

    /// --file and --env CREDENTIALS_DIRECTORY together are refused (64); what the command adds
    /// to the --file directory goes with it. (How long output is held back: MaskingOrderTests.)
    @Test func theDirectoryIsOursAndGoesWhole() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "dots"], input: String(repeating: ".", count: 30) + "Y")
            let both = try cli([
                "-s", s, "exec", "--env", "CREDENTIALS_DIRECTORY=dots", "--file", "d=dots", "--", "true",
            ])
            #expect(both.status == 64 && both.stderr.contains("which --file sets"), "\(both.stderr)")
            let record = FileManager.default.temporaryDirectory.appendingPathComponent("kc-file-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: record) }
            let added = try cli([
                "-s", s, "exec", "--file", "d=dots", "--", "sh", "-c",
                #"d=$CREDENTIALS_DIRECTORY; echo "$d" > "$0"; cp "$d/d" "$d/copy"; mkdir "$d/sub"; cp "$d/d" "$d/sub/x""#,
                record,
            ])
            #expect(added.status == 0, "\(added.stderr)")
            let directory = try String(contentsOfFile: record, encoding: .utf8).trimmingCharacters(in: .newlines)
            #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is left")
        }
    }

    /// A long secret through `base64` (76 columns) and `openssl base64` (64), wherever it
    /// starts in a line: no line of the encoded secret is left showing.
    @Test func base64WrappedAcrossLinesIsMasked() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let secret = (0..<90).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! }
            _ = try cli(["-s", s, "set", "long"], input: String(secret))
            let script = #"""
                for pre in "" x xy 0123456789 012345678901234567890123456789012345678901234567; do
                    printf '%s%s' "$pre" "$L" | base64; printf '%s%s' "$pre" "$L" | openssl base64
                done
                """#
            let result = try cli(["-s", s, "exec", "--env", "L=long", "--", "sh", "-c", script])
            #expect(result.status == 0, "\(result.stderr)")
            let encoded = Data(String(secret).utf8).base64EncodedString()
            for piece in stride(from: 8, to: encoded.count - 12, by: 8).map({ String(encoded.dropFirst($0).prefix(8)) })
            {
                #expect(!result.stdoutText.contains(piece), "\(piece) in \(result.stdoutText)")
            }
            #expect(result.stdoutText.components(separatedBy: "***").count == 11, "\(result.stdoutText)")
        }
    }
}
