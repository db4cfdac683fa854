import Foundation
import TestSupport
import Testing

/// Runs `script` under bash with `$KC` the binary under test, in the current backend's environment.
func shell(_ script: String, stdin: Data? = nil, directory: String? = nil, timeout: Double = 60) throws
    -> ProcessResult
{
    var environment = cliEnvironment()
    environment["KC"] = keychainCLIPath
    let prefix = directory.map { "cd '\($0)' || exit 99; " } ?? ""
    return try runProcess(
        "/bin/bash", ["-c", prefix + script], stdin: stdin, environment: environment, timeout: timeout)
}

/// Each test reproduces one defect an adversarial pass found, on every backend it applies to,
/// grouped by what was at stake: data, secrets, streams and exit codes, messages.
@Suite("Hardening: data loss, leaks, exit codes", .keyringSession)
final class HardeningTests {
    let scratch: ScratchDirectory

    init() throws {
        scratch = try ScratchDirectory("hardening")
    }

    deinit { scratch.remove() }

    private func path(_ name: String) -> String { scratch.path(name) }

    // MARK: - Data: nothing is lost or misread

    // "\r\n" is one Swift Character: CRLF files must split into lines all the same.
    @Test(arguments: CLIBackend.allCases)
    func crlfDotenvEnvFilesAndTemplatesAreReadLineByLine(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let imported = try cli(["-s", s, "import"], stdin: Data("A=1\r\nB=\"two\"\r\n\r\n# c\r\nC=3\r\n".utf8))
            #expect(imported.stdoutText == "added 3, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["-s", s, "get", "A"]).stdoutText == "1")
            #expect(try cli(["-s", s, "get", "B"]).stdoutText == "two")
            let envFile = path("crlf.env")
            try Data("X=A\r\n# comment\r\nY=\(s)/C\r\n".utf8).write(to: URL(fileURLWithPath: envFile))
            let exec = try cli(["-s", s, "exec", "--env-file", envFile, "--", "sh", "-c", #"printf %s "$X$Y""#])
            #expect(exec.status == 0, "\(exec.stderr)")
            #expect(exec.stdoutText == "13")
            let template = "a: {{ keychain://\(s)/A }}\r\nb: x\r\nc: {{ keychain://\(s)/missing }}\r\n"
            let injected = try cli(["inject"], input: template)
            #expect(injected.status == 1)
            #expect(injected.stderr.hasPrefix("keychain-cli: standard input:3: "), "\(injected.stderr)")
            let good = try cli(["inject"], input: "a: {{ keychain://\(s)/A }}\r\nb: {{ keychain://\(s)/C }}\r\n")
            #expect(good.stdoutText == "a: 1\r\nb: 3\r\n")
        }
    }

    // Two items under one service and key (two tools) export as one entry, and a backup that
    // holds an entry twice with the same secret imports.
    @Test(arguments: CLIBackend.allCases)
    func duplicateEntriesWithOneSecretImportAndConflictingOnesAreRefused(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let entry = #"{"service":"\#(s)","key":"k","encoding":"utf8","secret":"same"}"#
            let other = #"{"service":"\#(s)","key":"k","encoding":"utf8","secret":"other"}"#
            let twice = #"{"format":"keychain-cli-export","version":1,"items":[\#(entry),\#(entry)]}"#
            let imported = try cli(["import"], input: twice)
            #expect(imported.stdoutText == "added 1, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "same")
            let conflicting = #"{"format":"keychain-cli-export","version":1,"items":[\#(entry),\#(other)]}"#
            let refused = try cli(["import", "--overwrite"], input: conflicting)
            #expect(refused.status == 65)
            #expect(refused.stderr.contains("entries 1 and 2"), "\(refused.stderr)")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "same")
        }
    }

    // The docs promise that a vault path that is a link stays a link, dangling ones too.
    @Test func aDanglingVaultLinkStaysALinkAndItsTargetIsCreated() throws {
        let target = path("elsewhere/secrets.age")
        try FileManager.default.createDirectory(atPath: path("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: path("link.age"), withDestinationPath: "elsewhere/secrets.age")
        try CLIBackend.withVault { (_: String) throws in
            let link = ["KEYCHAIN_VAULT": path("link.age")]
            #expect(try cli(["-s", "s", "set", "k"], stdin: Data("v".utf8), extra: link).status == 0)
            #expect(try cli(["-s", "s", "get", "k"], extra: link).stdoutText == "v")
        }
        let link = try FileManager.default.destinationOfSymbolicLink(atPath: path("link.age"))
        #expect(link == "elsewhere/secrets.age")
        #expect(FileManager.default.fileExists(atPath: target))
    }

    // Any name but NUL; listings escape what would garble a terminal; -0 and --json are exact.
    @Test(arguments: CLIBackend.allCases)
    func namesWithControlAndBidiCharactersAreStoredListedEscapedAndExact(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let names = ["esc\u{1b}[31m", "two\nlines", "rtl\u{202E}gpj.exe", "back\\slash", "plain"]
            for name in names {
                #expect(try cli(["-s", s, "set", "--", name], input: "v-\(name)").status == 0, "\(name)")
            }
            let listed = try cli(["-s", s, "list"])
            #expect(
                listed.stdoutText
                    == "back\\\\slash\nesc\\u{001B}[31m\nplain\nrtl\\u{202E}gpj.exe\ntwo\\nlines\n")
            let exact = try cli(["-s", s, "list", "-0"])
            #expect(exact.stdout == Data((names.sorted().joined(separator: "\0") + "\0").utf8))
            let json =
                try JSONSerialization.jsonObject(with: cli(["-s", s, "list", "--json"]).stdout) as! [[String: Any]]
            #expect(json.compactMap { $0["key"] as? String } == names.sorted())
            #expect(try cli(["-s", s, "get", "two\nlines"]).stdoutText == "v-two\nlines")
            let missing = try cli(["-s", s, "get", "no\u{1b}]0;title\u{7}"])
            #expect(missing.status == 1)
            #expect(!missing.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
            let backup = try cli(["-s", s, "export", "--yes"])
            #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText == "removed 5 secrets of service '\(s)'\n")
            #expect(try cli(["import"], stdin: backup.stdout).stdoutText == "added 5, replaced 0, skipped 0\n")
            #expect(try cli(["-s", s, "list", "-0"]).stdout == exact.stdout)
        }
    }

    // The env format escapes CR and LF, and a value that starts with a combining mark round-trips.
    @Test(arguments: CLIBackend.allCases)
    func envExportEscapesEveryLineBreakAndRoundTripsCombiningMarks(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let values = ["crlf": "a\r\nb", "combining": "\u{301}é\"", "quote": "\"\u{301}"]
            for (key, value) in values { _ = try cli(["-s", s, "set", key, "--raw"], input: value) }
            let exported = try cli(["-s", s, "export", "--format", "env", "--yes"])
            #expect(exported.status == 0)
            #expect(!exported.stdout.contains(13), "a raw carriage return was written")
            #expect(exported.stdoutText.contains(#"CRLF="a\r\nb""#))
            #expect(exported.stdout.split(separator: 10).count == 3)
            let other = uniqueService()
            #expect(try cli(["-s", other, "import"], stdin: exported.stdout).status == 0)
            for (key, value) in values {
                #expect(try cli(["-s", other, "get", key.uppercased()]).stdoutText == value, "\(key)")
            }
        }
    }

    // inject is linear in its references, and an unclosed reference is malformed.
    @Test(arguments: CLIBackend.allCases)
    func injectScalesLinearlyAndRefusesAnUnclosedReference(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "V")
            let template = String(repeating: "x: {{ keychain://\(s)/k }}\n", count: 20_000)
            // 644 s when each reference recounted the lines before it; the limit only catches that.
            let filled = try cli(["inject"], stdin: Data(template.utf8), timeout: 60)
            #expect(filled.status == 0)
            #expect(filled.stdoutText == String(repeating: "x: V\n", count: 20_000))
            try "old".write(toFile: path("out"), atomically: true, encoding: .utf8)
            for unclosed in ["a\nb: {{ keychain://\(s)/k\n", "a\nb: {{ keychain://\(s)/k \nc: {{ x }}\n"] {
                let result = try cli(["inject", "-o", path("out")], input: unclosed)
                #expect(result.status == 64, "\(unclosed)")
                #expect(result.stderr.contains("standard input:2: a reference {{ keychain://… is not closed by }}"))
            }
            #expect(try String(contentsOfFile: path("out"), encoding: .utf8) == "old")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func importFilesAreJudgedLikeAPersonWould(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let bom =
                "\u{FEFF}"
                + #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"k","encoding":"utf8","secret":"v"}]}"#
            #expect(try cli(["import"], input: bom).stdoutText == "added 1, replaced 0, skipped 0\n")
            let missing = try cli(
                ["import"],
                input:
                    #"{"format":"keychain-cli-export","version":1,"items":[{"service":"\#(s)","key":"k","encoding":"utf8"}]}"#
            )
            #expect(missing.status == 65)
            #expect(missing.stderr.contains("item 1 has no field 'secret'"), "\(missing.stderr)")
            #expect(!missing.stderr.contains("CodingKeys"))
            let array = try cli(["import"], input: "[]")
            #expect(array.status == 65)
            #expect(array.stderr.contains("is a JSON array"))
            // A file that merely starts with [ is not called JSON.
            let section = try cli(["import"], input: "[section]\nkey=value\n")
            #expect(section.status == 65 && section.stderr.contains("is not valid JSON"), "\(section.stderr)")
            #expect(!section.stderr.contains("JSON array"))
            let dotenvWithBOM = try cli(["-s", s, "import", "--overwrite"], input: "\u{FEFF}K2=x\r\n")
            #expect(dotenvWithBOM.status == 0, "\(dotenvWithBOM.stderr)")
            #expect(try cli(["-s", s, "get", "K2"]).stdoutText == "x")
            let directory = try cli(["-s", s, "set", "d", "--from-file", scratch.url.path])
            #expect(directory.status == 74)
            #expect(directory.stderr.contains("'\(scratch.url.path)'"), "\(directory.stderr)")
        }
    }

    // MARK: - Leaks: no secret in messages, files left behind or core dumps

    // No plaintext temporary file survives an interrupted inject -o or export -o.
    @Test(arguments: CLIBackend.allCases)
    func interruptedOutputFilesLeaveNoTemporaryFileBehind(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "SECRET")
            // 16 MiB minus a little, so writing and syncing the output takes a while.
            let line = "v: {{ keychain://\(s)/k }} " + String(repeating: "x", count: 990) + "\n"
            let template = String(repeating: line, count: 15_000)
            try template.write(toFile: path("big.tmpl"), atomically: true, encoding: .utf8)
            let directory = path("out")
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for attempt in 0..<12 {
                let output = "\(directory)/result-\(attempt % 2).yaml"
                let delay = 0.02 * Double(attempt)
                let signal = attempt % 3 == 0 ? "KILL" : attempt % 3 == 1 ? "TERM" : "INT"
                _ = try shell(
                    #"$KC inject -i "$1" -o "$2" & p=$!; sleep \#(delay); kill -\#(signal) $p; wait $p; true"#
                        .replacingOccurrences(of: "$1", with: path("big.tmpl"))
                        .replacingOccurrences(of: "$2", with: output))
                let entries = try FileManager.default.contentsOfDirectory(atPath: directory)
                #expect(entries.allSatisfy { $0.hasPrefix("result-") }, "attempt \(attempt): \(entries)")
                for entry in entries {
                    let size = try FileManager.default.attributesOfItem(atPath: "\(directory)/\(entry)")[.size] as? Int
                    #expect(size == template.utf8.count - 15_000 * "{{ keychain://\(s)/k }}".utf8.count + 15_000 * 6)
                }
            }
            let exported = try shell(#"$KC -s \#(s) export --yes -o "\#(directory)/export.json" & wait $!"#)
            #expect(exported.status == 0)
            // What a writer killed between linkat and rename would leave is removed by the next
            // write of that path once it is a minute old; a fresh one (a live writer's) is kept.
            let stale = "\(directory)/.export.json.keychain-cli.Ab12Cd"
            let fresh = "\(directory)/.export.json.keychain-cli.Zz98Yx"
            for file in [stale, fresh] {
                #expect(
                    FileManager.default.createFile(
                        atPath: file, contents: Data("s".utf8), attributes: [.posixPermissions: 0o600]))
            }
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSinceNow: -120)], ofItemAtPath: stale)
            #expect(try shell(#"$KC -s \#(s) export --yes -o "\#(directory)/export.json""#).status == 0)
            #expect(!FileManager.default.fileExists(atPath: stale))
            #expect(FileManager.default.fileExists(atPath: fresh))
        }
    }

    // Whatever follows `set KEY`, it is never repeated in a message.
    @Test func wordsAfterSetAreNeverEchoed() throws {
        for arguments in [
            ["set", "k", "-s3cr3t"], ["set", "-s3cr3t"], ["set", "k", "--s3cr3t=x"], ["set", "k", "-xs3cr3t", "more"],
            ["set", "k", "--", "-s3cr3t"], ["set", "k", "s3cr3t"], ["set", "--from-env", "s3cr3t", "x", "y"],
        ] {
            let result = try cli(arguments, stdin: Data("x".utf8), session: nil)
            #expect(result.status == 64, "\(arguments)")
            #expect(!result.stderr.contains("3cr3t"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("keychain-cli: "))
        }
    }

    // No core dump holds a secret or the passphrase, and the core limit is not passed on to exec's command.
    @Test func theProcessCannotDumpCoreButExecCommandsCan() throws {
        let s = uniqueService()
        _ = try cli(["-s", s, "set", "k"], input: "v")
        let directory = path("cores")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let result = try shell(
            #"""
            ulimit -c unlimited
            # set waits on its input, a FIFO this script alone holds open for writing (fd 3).
            mkfifo in; exec 3<> in
            KEYCHAIN_PASSPHRASE=pass-in-core $KC -s \#(s) set k2 < in 3>&- & pid=$!
            # Until it runs keychain-cli and has set its limit (5 s at most: then the limit shows).
            for i in $(seq 250); do
              [ "$(readlink /proc/$pid/exe)" = "$KC" ] && grep -q "^Max core file size *0 " /proc/$pid/limits && break
              sleep 0.02
            done
            awk '/Max core file size/ { print "limit=" $5 }' /proc/$pid/limits
            # (Then the end of its input ends it, as the end of `sleep 5 |` did.)
            kill -QUIT $pid; exec 3>&-; wait $pid
            $KC -s \#(s) exec --env A=k -- sh -c 'echo "child=$(ulimit -c)"'
            """#, directory: directory)
        #expect(result.stdoutText == "limit=0\nchild=unlimited\n", "\(result.stdoutText) \(result.stderr)")
        let cores = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("core") }
        #expect(cores.isEmpty, "core files: \(cores)")
    }

    // MARK: - Streams and exit codes

    @Test func invalidUTF8InAnArgumentIsAUsageErrorButExecArgumentsPassUnchanged() throws {
        let refused = try shell(#"$KC get "$(printf 'a\376b')"; echo " rc=$?""#)
        #expect(refused.stdoutText.hasSuffix(" rc=64\n"))
        #expect(refused.stderr.contains("not valid UTF-8"))
        let variable = try shell(#"KEYCHAIN_SERVICE="$(printf 'a\376b')" $KC list; echo " rc=$?""#)
        #expect(variable.stdoutText.hasSuffix(" rc=64\n"))
        #expect(variable.stderr.contains("$KEYCHAIN_SERVICE is not valid UTF-8"))
        try CLIBackend.vault.run {
            _ = try cli(["-s", "s", "set", "k"], input: "v")
            let passed = try shell(#"$KC -s s exec --env A=k -- printf '%s' "$(printf 'a\376b')" | od -An -tx1"#)
            #expect(passed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "61 fe 62", "\(passed.stderr)")
        }
    }

    // A closed stdout is an error; a reader that goes away ends us quietly, like a filter.
    @Test(arguments: CLIBackend.allCases)
    func closedStdoutIs74AndAClosedPipeEndsQuietly(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "8-bytes!")
            let closed = try shell(#"$KC -s \#(s) get k >&-; echo "rc=$?""#)
            #expect(closed.stdoutText == "rc=74\n", "\(closed.stderr)")
            #expect(closed.stderr.contains("could not write to standard output"))
            _ = try cli(["-s", s, "set", "big", "--raw"], stdin: Data(repeating: 65, count: 1 << 20))
            for command in ["get big", "export --yes"] {
                let piped = try shell(#"$KC -s \#(s) \#(command) | head -c 1 >/dev/null; echo "rc=${PIPESTATUS[0]}""#)
                #expect(piped.stderr.isEmpty, "\(command): \(piped.stderr)")
                #expect(piped.stdoutText == "rc=141\n", "\(command)")
            }
        }
    }

    // --passphrase-fd 0 leaves exec's command a standard input (at its end), not a closed one.
    @Test func passphraseFromStandardInputLeavesExecAStandardInput() throws {
        try CLIBackend.vault.run {
            _ = try cli(["-s", "s", "set", "k"], input: "v")
            let result = try shell(
                #"printf %s "$KEYCHAIN_PASSPHRASE" | env -u KEYCHAIN_PASSPHRASE $KC --passphrase-fd 0 -s s exec --env A=k -- sh -c 'cat; echo "cat=$? A=$A"'"#
            )
            #expect(result.stdoutText == "cat=0 A=v\n", "\(result.stderr)")
        }
    }

    @Test func aVaultPathThatNamesADirectoryIsRefusedAndCreatesNothing() throws {
        try CLIBackend.withVault { (_: String) throws in
            for vault in [scratch.url.path + "/newdir/", scratch.url.path + "/"] {
                let result = try cli(["--vault", vault, "-s", "s", "set", "k"], input: "v")
                #expect(result.status == 64, "\(vault)")
                #expect(result.stderr.contains("names a directory"))
            }
            #expect(!FileManager.default.fileExists(atPath: path("newdir")))
        }
    }

    // MARK: - Messages say what happened and what to do next

    @Test func usageMessagesSuggestAndHint() throws {
        let typo = try cli(["gett", "k"], session: nil)
        #expect(typo.status == 64)
        #expect(typo.stderr.contains("unknown command 'gett'. Did you mean 'get'?"))
        let help = try cli(["help", "nosuch"], session: nil)
        #expect(help.status == 64)
        #expect(help.stdout.isEmpty)
        #expect(try cli(["help", "get"], session: nil).status == 0)
        for shell in ["bash", "zsh", "fish"] {
            let completion = try cli(["--generate-completion-script", shell], session: nil)
            #expect(completion.status == 0 && completion.stdoutText.contains("keychain-cli"), "\(completion.stderr)")
        }
        let backend = try cli(["--backend", "vaultt", "list"], session: nil)
        #expect(backend.status == 64)
        #expect(!backend.stderr.contains(".."))
        let timeout = try cli(["--timeout", "-1", "list"], session: nil)
        #expect(timeout.stderr.contains("--timeout must be a number of seconds above 0"))
        let dashed = try cli(["get", "-weird"], session: nil)
        #expect(dashed.stderr.contains("keychain-cli get -- -weird"))
        for result in [typo, help, backend, timeout, dashed] {
            #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(result.stderr)")
        }
    }

    @Test func exportRefusesWithoutYesBeforeTouchingTheBackend() throws {
        let refused = try cli(["export"], session: nil)
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("Pass --yes"))
    }

    @Test func endOfInputAtTheSetPromptSaysSo() throws {
        let s = uniqueService()
        let result = try expect(
            """
            spawn $env(KEYCHAIN_CLI) -s \(s) set k
            expect "Secret for"
            send "\\004"
            expect eof
            """)
        #expect(result.stdoutText.contains("nothing was typed at the prompt"), "\(result.stdoutText)")
        #expect(!result.stdoutText.contains("variable you piped"))
    }
}
