import Foundation
import TestSupport
import Testing

/// A running `exec --restart-on-change` whose command notes each start in `starts` (its pid and
/// the length of $A), writes $A to `value-PID`, prints $A (masked) and waits; it exits 40 + the
/// number of starts once `quit` exists.
private final class RestartingExec {
    let directory: ScratchDirectory
    let process: ChildProcess
    let service: String

    static let command =
        #"printf '%s' "$A" > "$OUT/value-$$"; echo "$$ ${#A} ${B:-none}" >> "$OUT/starts"; echo "running $A" ; "#
        + #"while [ ! -e "$OUT/quit" ]; do sleep 0.05; done; exit $((40 + $(wc -l < "$OUT/starts")))"#

    init(_ options: [String], service: String, script: String = RestartingExec.command) throws {
        directory = try ScratchDirectory("restart")
        self.service = service
        var environment = cliEnvironment()
        environment["OUT"] = directory.url.path
        process = try ChildProcess(
            keychainCLIPath, ["-s", service, "exec", "--restart-on-change"] + options + ["--", "sh", "-c", script],
            environment: environment,
            files: [
                (0, "/dev/null", O_RDONLY), (1, directory.path("stdout"), O_WRONLY | O_CREAT | O_TRUNC),
                (2, directory.path("stderr"), O_WRONLY | O_CREAT | O_TRUNC),
            ])
    }

    deinit {
        process.stop(grace: 1)
        directory.remove()
    }

    /// Each start: its pid, the length of $A and $B (or none).
    var starts: [(pid: String, length: Int, b: String)] {
        tail(ofFile: directory.path("starts")).split(separator: "\n").map {
            let parts = $0.split(separator: " ").map(String.init)
            return (parts[0], Int(parts[1]) ?? -1, parts.count > 2 ? parts[2] : "")
        }
    }

    /// The value of $A the last start got.
    var lastValue: String? {
        starts.last.flatMap { try? String(contentsOfFile: directory.path("value-\($0.pid)"), encoding: .utf8) }
    }
    var stdout: String { tail(ofFile: directory.path("stdout"), 100_000) }
    var stderr: String { tail(ofFile: directory.path("stderr"), 100_000) }

    func waitForStarts(_ count: Int, timeout: Double = 10) -> Bool {
        eventually(timeout: timeout) { starts.count >= count }
    }

    /// Sets `key` to a new value until the command is started again with it (the watch may not
    /// see a write made before it began); the value it ended with.
    func changeUntilRestarted(_ key: String = "token", label: String = "rotated") throws -> String {
        let before = starts.count
        for attempt in 1...5 {
            let value = "\(label)-secret-value-\(attempt)"
            #expect(try cli(["-s", service, "set", key], input: value).status == 0)
            if waitForStarts(before + 1, timeout: 4) {
                #expect(eventually(timeout: 5) { lastValue == value } || lastValue?.hasPrefix(label) == true)
                return lastValue ?? ""
            }
        }
        Issue.record("never restarted: \(stderr)")
        return ""
    }

    /// Lets the command exit on its own and waits for exec.
    func quit() -> ChildProcess {
        #expect(FileManager.default.createFile(atPath: directory.path("quit"), contents: Data()))
        _ = process.wait(timeout: 10)
        return process
    }
}

@Suite("exec --restart-on-change", .keyringSession)
struct ExecRestartTests {
    @Test(arguments: CLIBackend.allCases)
    func aChangedSecretRestartsTheCommandWithTheNewValueMaskedAndItsLastStatusIsExecs(on backend: CLIBackend)
        throws
    {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            let exec = try RestartingExec(["--env", "A=token"], service: s)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            #expect(exec.lastValue == "first-secret-value")
            let rotated = try exec.changeUntilRestarted()
            #expect(exec.starts.count == 2)
            #expect(exec.starts.last?.length == rotated.count)
            #expect(eventually(timeout: 5) { exec.stdout.components(separatedBy: "running ***").count == 3 })
            #expect(!exec.stdout.contains("first-secret") && !exec.stdout.contains(rotated), "\(exec.stdout)")
            let ended = exec.quit()
            #expect(ended.status?.code == 42 && ended.status?.signaled == false)
            #expect(!exec.stderr.contains("secret-value"), "\(exec.stderr)")
        }
    }

    @Test func aCommandThatIgnoresTheSignalIsKilledAfterTheGraceAndSignalsStillEndExec() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            let script =
                #"trap '' TERM; echo "$$ ${#A}" >> "$OUT/starts"; printf '%s' "$A" > "$OUT/value-$$"; exec sleep 600"#
            let exec = try RestartingExec(["--env", "A=token", "--restart-grace", "1"], service: s, script: script)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            let started = Date()
            _ = try exec.changeUntilRestarted()
            #expect(Date().timeIntervalSince(started) >= 1, "restarted before the grace was over")
            #expect(exec.starts.count == 2)
            // SIGINT to exec reaches the command (which ignores only SIGTERM) and ends exec.
            exec.process.signal(SIGINT)
            #expect(exec.process.wait(timeout: 5))
            #expect(exec.process.status?.signaled == true && exec.process.status?.code == SIGINT)
        }
    }

    @Test func theRestartSignalIsTheOneGivenAndASignalToExecDuringARestartEndsIt() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            let script =
                #"trap 'echo hup >> "$OUT/signals"; [ -e "$OUT/stay" ] || exit 0' HUP; "#
                + #"echo "$$ ${#A}" >> "$OUT/starts"; printf '%s' "$A" > "$OUT/value-$$"; "#
                + #"while :; do sleep 0.05; done"#
            let exec = try RestartingExec(
                ["--env", "A=token", "--restart-signal", "SIGHUP", "--restart-grace", "5"], service: s, script: script)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            let started = Date()
            _ = try exec.changeUntilRestarted()
            #expect(Date().timeIntervalSince(started) < 5, "HUP ended it: no SIGKILL after the grace")
            let signals = exec.directory.path("signals")
            #expect(tail(ofFile: signals) == "hup\n")
            // Now it stays on HUP: a SIGTERM to exec while it waits is passed on and ends both.
            #expect(FileManager.default.createFile(atPath: exec.directory.path("stay"), contents: Data()))
            #expect(try cli(["-s", s, "set", "token"], input: "third-secret-value").status == 0)
            #expect(eventually(timeout: 10) { tail(ofFile: signals) == "hup\nhup\n" }, "\(exec.stderr)")
            exec.process.signal(SIGTERM)
            #expect(exec.process.wait(timeout: 5))
            #expect(exec.process.status?.signaled == true && exec.process.status?.code == SIGTERM)
            #expect(exec.starts.count == 2)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func aBurstOfWritesRestartsOnce(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            let exec = try RestartingExec(["--env", "A=token"], service: s)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            _ = try exec.changeUntilRestarted(label: "ready")
            let before = exec.starts.count
            // Twenty writes from one shell, as fast as keychain-cli starts, each one's end timed.
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            let burst = try runProcess(
                "/bin/sh",
                [
                    "-c",
                    #"for i in $(seq 1 20); do printf 'burst-secret-%s' "$i" | "$KC" -s "$1" set token || exit 1; date +%s.%N; done"#,
                    "sh", s,
                ],
                environment: environment)
            #expect(burst.status == 0, "\(burst.stderr)")
            // The debounce restarts once no change has come for its quiet time (0.25 s, 1.25 s
            // where the backend is polled), and at the latest 3 s after a burst's first change:
            // once for twenty quick writes, and once more for each pause longer than the quiet
            // time (a loaded machine's) and each 3 s the burst lasts.
            let ends = burst.stdoutText.split(separator: "\n").compactMap { Double($0) }
            let quiet = backend == .openbao || backend == .treeVault ? 1.25 : 0.25
            let pauses = zip(ends, ends.dropFirst()).filter { $1 - $0 > quiet }.count
            let extra = pauses + Int(((ends.last ?? 0) - (ends.first ?? 0)) / 3)
            #expect(eventually(timeout: 10) { exec.lastValue == "burst-secret-20" }, "\(exec.stderr)")
            // One more change, seen after the burst's: the starts then are the burst's and its.
            #expect(try cli(["-s", s, "set", "token"], input: "after-burst-value").status == 0)
            #expect(eventually(timeout: 10) { exec.lastValue == "after-burst-value" }, "\(exec.stderr)")
            #expect(
                (before + 2...before + 2 + extra).contains(exec.starts.count),
                "\(exec.starts.map(\.length)), \(pauses) pauses")
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func aChangeToASecretNotUsedRestartsNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            #expect(try cli(["-s", s, "set", "unused"], input: "unused-value-1").status == 0)
            let exec = try RestartingExec(["--env", "A=token"], service: s)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            _ = try exec.changeUntilRestarted(label: "ready")
            let before = exec.starts.count
            #expect(try cli(["-s", s, "set", "unused"], input: "unused-value-2").status == 0)
            #expect(try cli(["-s", s, "set", "other-key"], input: "new-key-value").status == 0)
            // A round of the watch (a poll, and the burst's quiet), then the used key: one restart.
            Thread.sleep(forTimeInterval: 1.5)
            #expect(try cli(["-s", s, "set", "token"], input: "used-key-value").status == 0)
            #expect(eventually(timeout: 10) { exec.lastValue == "used-key-value" }, "\(exec.stderr)")
            #expect(exec.starts.count == before + 1)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func aDeletedSecretKeepsTheCommandRunningAndAFailedReReadRestartsNothing(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret-value").status == 0)
            #expect(try cli(["-s", s, "set", "second"], input: "second-secret-value").status == 0)
            let exec = try RestartingExec(["--env", "A=token", "--env", "B=second"], service: s)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            _ = try exec.changeUntilRestarted(label: "ready")
            let before = exec.starts.count
            #expect(try cli(["-s", s, "delete", "second"]).status == 0)
            #expect(eventually(timeout: 10) { exec.stderr.contains("$B: the secret 'second'") }, "\(exec.stderr)")
            #expect(exec.stderr.contains("was deleted; the command keeps running"))
            // A change now cannot be read whole: the command keeps running, and says why.
            #expect(try cli(["-s", s, "set", "token"], input: "while-deleted-value").status == 0)
            #expect(eventually(timeout: 10) { exec.stderr.contains("the command was not restarted and keeps running") })
            #expect(exec.process.isRunning && exec.starts.count == before)
            // Set again: a change of what it was given.
            #expect(try cli(["-s", s, "set", "second"], input: "back-again").status == 0)
            #expect(eventually(timeout: 10) { exec.starts.count == before + 1 }, "\(exec.stderr)")
            #expect(exec.starts.last?.b == "back-again" && exec.lastValue == "while-deleted-value")
            for secret in ["secret-value", "while-deleted", "back-again"] {
                #expect(!exec.stderr.contains(secret), "\(exec.stderr)")
            }
        }
    }

    @Test func fromRestartsWhenAKeyItSelectsIsAddedOrRemoved() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "a"], input: "first-secret-value").status == 0)
            let exec = try RestartingExec(["--from", s, "--except", "skipped*"], service: s)
            #expect(exec.waitForStarts(1), "\(exec.stderr)")
            _ = try exec.changeUntilRestarted("a", label: "ready")
            let before = exec.starts.count
            #expect(try cli(["-s", s, "set", "b"], input: "added-value").status == 0)
            #expect(eventually(timeout: 10) { exec.starts.last?.b == "added-value" }, "\(exec.stderr)")
            #expect(try cli(["-s", s, "set", "skipped-key"], input: "not-selected").status == 0)
            Thread.sleep(forTimeInterval: 1)
            #expect(try cli(["-s", s, "delete", "b"]).status == 0)
            #expect(eventually(timeout: 10) { exec.starts.last?.b == "none" }, "\(exec.stderr)")
            #expect(exec.starts.count == before + 2)
            #expect(!exec.stderr.contains("deleted"))
        }
    }

    @Test func restartOptionsAreCheckedAsUsage() throws {
        let s = uniqueService()
        for options in [
            ["--restart-on-change", "--no-mask"], ["--restart-signal", "HUP"], ["--restart-grace", "1"],
            ["--restart-on-change", "--restart-signal", "BOGUS"], ["--restart-on-change", "--restart-grace", "-1"],
            ["--restart-on-change", "--restart-signal", "0"],
        ] {
            let result = try cli(["-s", s, "exec", "--env", "A=k"] + options + ["--", "true"])
            #expect(result.status == 64, "\(options): \(result.stderr)")
        }
        for name in ["HUP", "SIGHUP", "term", "15"] {
            let result = try cli([
                "-s", s, "exec", "--env", "A=missing", "--restart-on-change", "--restart-signal", name, "--", "true",
            ])
            #expect(result.status == 1, "\(name): \(result.stderr)")  // valid: the missing secret stops it
        }
    }
}
