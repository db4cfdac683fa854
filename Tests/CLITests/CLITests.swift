import Foundation
import TestSupport
import Testing

@Suite("keychain-cli without a backend")
struct HelpAndUsageTests {
    @Test func rootHelpListsEveryCommandAndTheExitCodes() throws {
        let help = try cli(["--help"], session: nil)
        #expect(help.status == 0)
        for word in ["set", "get", "delete", "reset", "list", "--service", "--timeout", "KEYCHAIN_SERVICE"] {
            #expect(help.stdoutText.contains(word), "help lacks \(word)")
        }
        for code in ["64", "65", "69", "70", "74", "75", "77"] {
            #expect(help.stdoutText.contains("  \(code)  "), "help lacks exit code \(code)")
        }
    }

    @Test(arguments: [
        ("set", ["--from-env", "--from-file", "--raw", "--allow-empty", "printf"]),
        ("get", ["-n", "--newline", "--json", "--raw"]),
        ("delete", ["--ignore-missing"]),
        ("reset", ["--yes"]),
        ("list", ["--all-services", "--json"]),
    ])
    func subcommandHelpDocumentsItsOptionsWithAnExample(command: String, words: [String]) throws {
        let help = try cli([command, "--help"], session: nil)
        #expect(help.status == 0)
        for word in words + ["keychain-cli", "--service"] {
            #expect(help.stdoutText.contains(word), "\(command) --help lacks \(word)")
        }
    }

    @Test func secretOnTheCommandLineIsRefusedWithoutEchoingIt() throws {
        let result = try cli(["set", "token", "hunter2-on-argv"], session: nil)
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("keychain-cli: refusing to take a secret from the command line"))
        #expect(result.stderr.contains("printf '%s'"))
        #expect(!result.stderr.contains("hunter2-on-argv"))
        let optionLike = try cli(["set", "token", "--hunter2-looks-like-an-option"], session: nil)
        #expect(optionLike.status == 64)
        #expect(!optionLike.stderr.contains("hunter2"))
    }

    @Test func usageErrorsExit64WithOneLineOnStderr() throws {
        for arguments in [
            ["get"], ["frobnicate"], ["get", "k", "-n", "--newline"], ["--timeout", "0", "list"],
            ["set", "k", "--from-env", "A", "--from-file", "B"],
        ] {
            let result = try cli(arguments, session: nil)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stderr.hasPrefix("keychain-cli: "), "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test func invalidKeyIsAUsageError() throws {
        let result = try cli(["get", ""], session: nil)
        #expect(result.status == 64)
        #expect(result.stderr.contains("the key name is empty"))
    }

    @Test func emptyPipedSecretIsRefusedBeforeTheBackend() throws {
        // No bus at all: the refusal must come first, with its own code, not 69.
        let result = try cli(["set", "k"], stdin: Data(), session: nil)
        #expect(result.status == 65)
        #expect(result.stderr.contains("--allow-empty"))
        let newlineOnly = try cli(["set", "k"], stdin: Data("\n".utf8), session: nil)
        #expect(newlineOnly.status == 65)
    }

    @Test func tooLargeSecretIsRefused() throws {
        let result = try cli(["set", "k"], stdin: Data(count: (1 << 20) + 1), session: nil)
        #expect(result.status == 65)
        #expect(result.stderr.contains("larger than the limit of 1048576 bytes"))
    }

    @Test func unsetEnvironmentVariableAndMissingFileAreClearErrors() throws {
        let unset = try cli(["set", "k", "--from-env", "KC_TEST_UNSET_VARIABLE"], session: nil)
        #expect(unset.status == 64)
        #expect(unset.stderr.contains("'KC_TEST_UNSET_VARIABLE' is not set"))
        let missing = try cli(["set", "k", "--from-file", "/nonexistent/secret"], session: nil)
        #expect(missing.status == 74)
        #expect(missing.stderr.contains("cannot open '/nonexistent/secret'"))
    }

    @Test func noSessionBusExits69WithTheHeadlessRecipe() throws {
        let result = try cli(["get", "k"], session: nil)
        #expect(result.status == 69)
        #expect(result.stderr.contains("no D-Bus session bus"))
        #expect(result.stderr.contains("dbus-run-session"))
        // The recipe works as printed, the wait for the daemon's name included.
        let recipe = try #require(result.stderr.firstRange(of: "sh -c '").map { result.stderr[$0.upperBound...] })
        let commands = recipe.trimmingCharacters(in: .newlines).dropLast().replacing(
            "keychain-cli ...", with: "keychain-cli doctor")
        let home = try ScratchDirectory("headless")
        defer { home.remove() }
        let environment = [
            "HOME": home.url.path, "XDG_RUNTIME_DIR": home.url.path, "PW": "throwaway", "LANG": "C.UTF-8",
            "PATH": URL(fileURLWithPath: keychainCLIPath).deletingLastPathComponent().path + ":/usr/bin:/bin",
        ]
        // The daemon outlives the session bus: its stderr goes to a file (a pipe would stay open),
        // and it is ended by its HOME.
        let script = #"exec 2>"$HOME/stderr"; "# + commands
        // The test runner's children start with most signals blocked: dbus-run-session could not
        // end its dbus-daemon.
        let unblocked =
            "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); os.execv(sys.argv[1], sys.argv[1:])"
        let run = try runProcess(
            "/usr/bin/python3", ["-c", unblocked, "/usr/bin/dbus-run-session", "--", "sh", "-c", script],
            environment: environment)
        // The recipe's daemon, found by its HOME, which no other process has, and signalled only
        // while its pid is still that daemon's (a pidfd taken, then checked).
        func isTheRecipesDaemon(_ pid: Int32) -> Bool {
            FileManager.default.contents(atPath: "/proc/\(pid)/comm") == Data("gnome-keyring-d\n".utf8)
                && (FileManager.default.contents(atPath: "/proc/\(pid)/environ") ?? Data()).split(separator: 0)
                    .contains(Data("HOME=\(home.url.path)".utf8))
        }
        let pids = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
        for pid in pids where isTheRecipesDaemon(pid) { signalVerified(pid, SIGTERM) { isTheRecipesDaemon(pid) } }
        #expect(run.status == 0 && run.stdoutText.contains("✓ default keyring unlocked: yes"), "\(run.stdoutText)")
    }
}

@Suite("keychain-cli on a private gnome-keyring", .keyringSession)
struct CommandTests {
    @Test(arguments: CLIBackend.allCases)
    func setFromAPipeStripsOneTrailingNewline(on backend: CLIBackend) throws {
        try backend.run { () throws in  // its only `try`s are inside #expect
            let s = uniqueService()
            for (input, expected) in [("tok\n", "tok"), ("tok\r\n", "tok"), ("tok\n\n", "tok\n"), ("tok", "tok")] {
                #expect(try cli(["-s", s, "set", "k"], input: input).status == 0)
                #expect(try cli(["-s", s, "get", "k"]).stdoutText == expected, "input \(input.debugDescription)")
            }
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func rawKeepsEveryByteAndBinaryRoundTripsThroughPipes(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            var bytes = Data([0, 0, 255, 254, 10, 13, 0x80, 0xc3, 0x28, 10])
            bytes += Data((0..<256).map { UInt8($0) })
            #expect(try cli(["-s", s, "set", "bin", "--raw"], stdin: bytes).status == 0)
            let got = try cli(["-s", s, "get", "bin"])
            #expect(got.status == 0)
            #expect(got.stdout == bytes)
            #expect(try cli(["-s", s, "get", "bin", "--raw"]).stdout == bytes)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func getAddsANewlineOnlyWhenAsked(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "v")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v")
            #expect(try cli(["-s", s, "get", "k", "-n"]).stdoutText == "v")
            #expect(try cli(["-s", s, "get", "k", "--newline"]).stdoutText == "v\n")
            // At a terminal, where the default adds one: -n and its long form leave it out.
            for flag in ["-n", "--no-newline"] {
                let shown = try expect(
                    """
                    spawn $env(KEYCHAIN_CLI) -s \(s) get k \(flag)
                    expect eof
                    lassign [wait] pid spawned failed status
                    exit $status
                    """)
                #expect(shown.status == 0 && shown.stdoutText.hasSuffix("get k \(flag)\r\nv"), "\(shown.stdoutText)")
            }
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func getJSONUsesBase64OnlyForBinary(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "text"], input: "héllo")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255]))
            let text =
                try JSONSerialization.jsonObject(with: cli(["-s", s, "get", "text", "--json"]).stdout)
                as! [String: String]
            #expect(text == ["service": s, "key": "text", "encoding": "utf8", "secret": "héllo"])
            let binary =
                try JSONSerialization.jsonObject(with: cli(["-s", s, "get", "bin", "--json"]).stdout)
                as! [String: String]
            #expect(binary["encoding"] == "base64")
            #expect(Data(base64Encoded: binary["secret"]!) == Data([0, 255]))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func allowEmptyStoresAnEmptySecret(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "e", "--allow-empty"], stdin: Data()).status == 0)
            let got = try cli(["-s", s, "get", "e"])
            #expect(got.status == 0)
            #expect(got.stdout.isEmpty)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func fromEnvironmentAndFromFile(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let env = try cli(["-s", s, "set", "e", "--from-env", "KC_SECRET"], extra: ["KC_SECRET": "from-env"])
            #expect(env.status == 0)
            #expect(try cli(["-s", s, "get", "e"]).stdoutText == "from-env")
            // A variable is stored exactly: a PEM in a variable ends with its newline.
            let pem = "-----BEGIN KEY-----\nAAAA\n-----END KEY-----\n"
            #expect(try cli(["-s", s, "set", "pem", "--from-env", "KC_SECRET"], extra: ["KC_SECRET": pem]).status == 0)
            #expect(try cli(["-s", s, "get", "pem"]).stdoutText == pem)
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("kc-secret-\(UUID())")
            try Data("from-file\n".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            #expect(try cli(["-s", s, "set", "f", "--from-file", file.path]).status == 0)
            #expect(try cli(["-s", s, "get", "f"]).stdoutText == "from-file")
            #expect(try cli(["-s", s, "set", "fr", "--from-file", file.path, "--raw"]).status == 0)
            #expect(try cli(["-s", s, "get", "fr"]).stdoutText == "from-file\n")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func setReplacesTheSecret(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "one")
            _ = try cli(["-s", s, "set", "k"], input: "two")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "two")
            #expect(try cli(["-s", s, "list"]).stdoutText == "k\n")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func missingItemsExit1AndIgnoreMissingExits0(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let get = try cli(["-s", s, "get", "absent"])
            #expect(get.status == 1)
            #expect(
                get.stderr
                    == "keychain-cli: no secret named 'absent' in service '\(s)'. Check the name with 'keychain-cli -s \(s) list'\n"
            )
            #expect(try cli(["-s", s, "delete", "absent"]).status == 1)
            #expect(try cli(["-s", s, "delete", "absent", "--ignore-missing"]).status == 0)
            _ = try cli(["-s", s, "set", "k"], input: "v")
            #expect(try cli(["-s", s, "delete", "k"]).status == 0)
            #expect(try cli(["-s", s, "get", "k"]).status == 1)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func globalOptionsWorkBeforeAndAfterTheCommandAndFromTheEnvironment(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["set", "k", "-s", s], input: "after").status == 0)
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "after")
            #expect(try cli(["--service", s, "--timeout", "10", "list"]).stdoutText == "k\n")
            #expect(try cli(["list", "--timeout", "10", "--service", s]).stdoutText == "k\n")
            let env = try cli(["get", "k"], extra: ["KEYCHAIN_SERVICE": s])
            #expect(env.stdoutText == "after")
            let flagWins = try cli(["-s", "\(s)-other", "get", "k"], extra: ["KEYCHAIN_SERVICE": s])
            #expect(flagWins.status == 1)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func listIsSortedAndNeverShowsSecrets(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            for key in ["zulu", "alpha", "Mike", "with space"] {
                _ = try cli(["-s", s, "set", key], input: "SECRET-\(key)")
            }
            let list = try cli(["-s", s, "list"])
            #expect(list.stdoutText == "Mike\nalpha\nwith space\nzulu\n")
            let json = try cli(["-s", s, "list", "--json"])
            #expect(!json.stdoutText.contains("SECRET-"))
            let items = try JSONSerialization.jsonObject(with: json.stdout) as! [[String: String]]
            #expect(items.map { $0["key"]! } == ["Mike", "alpha", "with space", "zulu"])
            // Every backend gives the label serve shows; KV records no writer for a field.
            #expect(items[0]["label"] == "\(s)/Mike (keychain-cli)")
            #expect(items[0]["application"] == (backend == .openbao ? nil : "keychain-cli"))
            #expect(items[0]["created"]?.hasSuffix("Z") == true)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func listAllServicesShowsServiceAndKey(on backend: CLIBackend) throws {
        try backend.run {
            let a = uniqueService("a")
            let b = uniqueService("b")
            _ = try cli(["-s", a, "set", "k1"], input: "1")
            _ = try cli(["-s", b, "set", "k2"], input: "2")
            let lines = try cli(["list", "--all-services"]).stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.contains("\(a)\tk1"))
            #expect(lines.contains("\(b)\tk2"))
            #expect(lines == lines.sorted())
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func resetNeedsYesOutsideATerminalAndTouchesOnlyItsService(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            for key in ["a", "b", "c"] { _ = try cli(["-s", s, "set", key], input: "v") }
            _ = try cli(["-s", other, "set", "keep"], input: "v")
            let refused = try cli(["-s", s, "reset"])
            #expect(refused.status == 64)
            #expect(refused.stderr.contains("Pass --yes"))
            #expect(try cli(["-s", s, "list"]).stdoutText == "a\nb\nc\n")
            let reset = try cli(["-s", s, "reset", "--yes"])
            #expect(reset.status == 0)
            #expect(reset.stdoutText == "removed 3 secrets of service '\(s)'\n")
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
            #expect(try cli(["-s", other, "get", "keep"]).stdoutText == "v")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func failedSetLeavesTheOldSecret(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "old")
            #expect(try cli(["-s", s, "set", "k"], stdin: Data()).status == 65)
            #expect(try cli(["-s", s, "set", "k"], stdin: Data(count: (1 << 20) + 1)).status == 65)
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "old")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func largestAllowedSecretRoundTrips(on backend: CLIBackend) throws {
        try backend.run { () throws in  // its only `try`s are inside #expect
            let s = uniqueService()
            let bytes = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            #expect(try cli(["-s", s, "set", "big", "--raw"], stdin: bytes).status == 0)
            #expect(try cli(["-s", s, "get", "big"]).stdout == bytes)
        }
    }
}

@Suite("keychain-cli at a terminal", .keyringSession)
struct TerminalTests {
    /// `set typed` at a terminal, answering the prompt with `first` and the confirmation with `second`.
    private func setTyped(service s: String, first: String, second: String) throws -> ProcessResult {
        try expect(
            """
            spawn $env(KEYCHAIN_CLI) -s \(s) set typed
            expect "Secret for 'typed': "
            send "\(first)\\r"
            expect "Repeat to confirm: "
            send "\(second)\\r"
            expect eof
            catch wait status
            exit [lindex $status 3]
            """)
    }

    @Test(arguments: CLIBackend.allCases)
    func setPromptsTwiceWithoutEcho(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let result = try setTyped(service: s, first: "hunter2-typed", second: "hunter2-typed")
            #expect(result.status == 0)
            #expect(!result.stdoutText.contains("hunter2-typed"), "the typed secret was echoed")
            #expect(try cli(["-s", s, "get", "typed"]).stdoutText == "hunter2-typed")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func mismatchedConfirmationStoresNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let result = try setTyped(service: s, first: "one", second: "two")
            #expect(result.status == 65)
            #expect(result.stdoutText.contains("the two entries differ"))
            #expect(try cli(["-s", s, "get", "typed"]).status == 1)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func getOnATerminalEndsWithANewlineAndRefusesBinary(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "visible")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0xff, 0x00, 0x1b]))
            let result = try expect(
                """
                spawn $env(KEYCHAIN_CLI) -s \(s) get k
                expect "visible\\r\\n"
                expect eof
                spawn $env(KEYCHAIN_CLI) -s \(s) get bin
                expect eof
                catch wait status
                exit [lindex $status 3]
                """)
            #expect(result.status == 65)
            #expect(result.stdoutText.contains("visible\r\n"))
            #expect(result.stdoutText.contains("is binary and would garble the terminal"))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func resetAsksOnATerminal(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "a"], input: "1")
            _ = try cli(["-s", s, "set", "b"], input: "2")
            // A script can tell: 77, as a dismissed prompt, for an answer other than y.
            func answered(_ command: String, _ answer: String) throws -> ProcessResult {
                try expect(
                    """
                    spawn $env(KEYCHAIN_CLI) -s \(s) \(command)
                    expect "\\[y/N\\] "
                    send "\(answer)\\r"
                    expect eof
                    lassign [wait] pid spawned failed status
                    exit $status
                    """)
            }
            let declined = try answered("reset", "n")
            #expect(declined.status == 77 && declined.stdoutText.contains("nothing was deleted"))
            #expect(declined.stdoutText.contains("Delete all 2 secret(s) of service '\(s)'?"))
            #expect(try cli(["-s", s, "list"]).stdoutText == "a\nb\n")
            let notExported = try answered("export", "")
            #expect(notExported.status == 77 && notExported.stdoutText.contains("nothing was exported"))
            let accepted = try answered("reset", "y")
            #expect(accepted.status == 0 && accepted.stdoutText.contains("removed 2 secrets"))
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
        }
    }
}
