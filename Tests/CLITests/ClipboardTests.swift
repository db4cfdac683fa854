import Foundation
import Testing

@testable import TestSupport

/// `get --clip` and `generate --clip` under a real X server (xclip, xsel) and a real Wayland
/// compositor (wl-clipboard), on every backend.
@Suite("--clip on X11 and Wayland", .keyringSession, .displays, .serialized)
struct ClipboardTests {
    enum Session: String, CaseIterable, CustomTestStringConvertible {
        case xclip, xsel, wayland
        var testDescription: String { rawValue }
    }

    /// The environment of `session`: its display, and a PATH where xsel is the only X11 tool.
    static func environment(_ session: Session) throws -> [String: String?] {
        let displays = try #require(Displays.current)
        switch session {
        case .xclip: return displays.x11Environment
        case .wayland: return displays.waylandEnvironment
        case .xsel: return displays.x11Environment.merging(["PATH": try onlyXsel()]) { $1 }
        }
    }

    /// A PATH with xsel and the shell's tools but no xclip.
    static func onlyXsel() throws -> String {
        let bin = FileManager.default.temporaryDirectory.appendingPathComponent("kc-only-xsel")
        if !FileManager.default.fileExists(atPath: bin.path) {
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(
                atPath: bin.appendingPathComponent("xsel").path,
                withDestinationPath: "/usr/bin/xsel")
        }
        return bin.path
    }

    /// The environment of a clipboard program of `session`.
    static func toolEnvironment(_ session: Session) throws -> [String: String] {
        var environment = cliEnvironment()
        for (name, value) in try Self.environment(session) { environment[name] = value }
        return environment
    }

    /// What the clipboard of `session` holds, or nil when it is empty (xclip empties it by owning
    /// an empty text, xsel and wl-copy by owning nothing). xclip -o waits forever for
    /// an owner that ends while it answers (a clearer at work): such a read is tried again.
    static func clipboard(_ session: Session) throws -> String? {
        let command =
            session == .wayland
            ? ["/usr/bin/wl-paste", "--no-newline"] : ["/usr/bin/xclip", "-selection", "clipboard", "-out"]
        for attempt in 1...3 {
            do {
                let result = try runProcess(
                    command[0], Array(command.dropFirst()),
                    environment: try toolEnvironment(session == .xsel ? .xclip : session), timeout: 3)
                return result.status == 0 && !result.stdout.isEmpty ? result.stdoutText : nil
            } catch is ProcessTimedOut where attempt < 3 {
                continue
            }
        }
        return nil
    }

    /// Another program takes the clipboard. xclip and wl-copy fork and keep it: through python,
    /// which closes every other descriptor, so that the forked copy does not hold the one
    /// Foundation's Process waits on (waitUntilExit would wait for it).
    static func copy(_ text: String, _ session: Session) throws {
        let command = session == .wayland ? ["wl-copy"] : ["xclip", "-selection", "clipboard", "-in"]
        let result = try runProcess(
            "/usr/bin/python3",
            ["-c", "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"] + command,
            stdin: Data(text.utf8), environment: try toolEnvironment(session == .xsel ? .xclip : session), timeout: 10)
        #expect(result.status == 0, "\(result.stderr)")
    }

    func run(_ arguments: [String], stdin: String? = nil, on session: Session) throws -> ProcessResult {
        try CLIBackend.$overrides.withValue(CLIBackend.overrides.merging(try Self.environment(session)) { $1 }) {
            try cli(arguments, stdin: stdin.map { Data($0.utf8) })
        }
    }

    /// Waits until the clipboard holds `expected` (nil: is empty), for up to `seconds`.
    static func waitForClipboard(_ expected: String?, _ session: Session, seconds: Double) throws -> Bool {
        try eventually(timeout: seconds, interval: 0.1) { try clipboard(session) == expected }
    }

    @Test(arguments: CLIBackend.allCases)
    func getClipCopiesAndClearsOnEveryBackend(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "tok"], input: "line one\nline two").status == 0)
            let result = try run(["-s", s, "get", "tok", "--clip", "--clear-after", "2"], on: .xclip)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("cleared in 2 s"))
            let copied = try Self.clipboard(.xclip)
            #expect(copied == "line one\nline two", "\(String(describing: copied))")
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 5), "still on the clipboard after 2 s")
        }
    }

    @Test(arguments: Session.allCases)
    func eachToolCopiesExactlyAndClears(_ session: Session) throws {
        try CLIBackend.vault.run {
            let secret = "p@ss w0rd\twith\r\nCRLF and ünïcode"
            #expect(try cli(["set", "k", "--raw"], input: secret).status == 0)
            let result = try run(["get", "k", "--clip", "--clear-after", "2"], on: session)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try Self.clipboard(session) == secret)
            #expect(try Self.waitForClipboard(nil, session, seconds: 5), "\(session): not cleared")
        }
    }

    /// The first clearer must not wipe what a second --clip put there; with the same secret
    /// copied twice, the second copy's time counts.
    @Test func aSecondClipIsNotWipedByTheFirstClearer() throws {
        try CLIBackend.vault.run {
            _ = try cli(["set", "a"], input: "first")
            _ = try cli(["set", "b"], input: "second")
            #expect(try run(["get", "a", "--clip", "--clear-after", "2"], on: .xclip).status == 0)
            #expect(try run(["get", "b", "--clip", "--clear-after", "4"], on: .xclip).status == 0)
            sleep(3)  // (past the first clearer's 2 s, before the second's 4: the times are what is tested)
            #expect(try Self.clipboard(.xclip) == "second", "the first clearer wiped the second secret")
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 4))

            #expect(try run(["get", "a", "--clip", "--clear-after", "2"], on: .xclip).status == 0)
            usleep(500_000)  // (the second copy comes later than the first: the order in time is tested)
            #expect(try run(["get", "a", "--clip", "--clear-after", "4"], on: .xclip).status == 0)
            sleep(3)  // (past the first copy's 2 s, before the second's 4)
            #expect(try Self.clipboard(.xclip) == "first", "the first copy's clearer wiped the second copy")
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 4))
        }
    }

    /// What another program copied is left alone; the secret itself, copied again by another
    /// program (a clipboard manager keeps copies that way), is cleared.
    @Test(arguments: [Session.xclip, .wayland])
    func whatAnotherProgramCopiedIsLeftAloneAndTheSecretIsNot(_ session: Session) throws {
        try CLIBackend.vault.run {
            _ = try cli(["set", "k"], input: "mine")
            #expect(try run(["get", "k", "--clip", "--clear-after", "1"], on: session).status == 0)
            try Self.copy("theirs", session)
            sleep(2)  // (past the 1 s clear-after: that nothing is cleared then is what is tested)
            #expect(try Self.clipboard(session) == "theirs")
            #expect(try run(["get", "k", "--clip", "--clear-after", "1"], on: session).status == 0)
            try Self.copy("mine", session)
            #expect(try Self.clipboard(session) == "mine")
            #expect(try Self.waitForClipboard(nil, session, seconds: 5), "a copy of the secret was left")
        }
    }

    /// A display that stops answering: the command gives up with 75, even for a secret larger
    /// than a pipe holds, and its clearer does not stay behind.
    @Test func aDisplayThatStopsAnsweringTimesOut() throws {
        try CLIBackend.vault.run {
            let scratch = try ScratchDirectory("stalled")
            defer { scratch.remove() }
            let number = scratch.path("display")
            let xvfb = try startQuietly(
                "/bin/sh", ["-c", #"exec Xvfb -displayfd 3 -nolisten tcp -noreset 3>"$0""#, number])
            defer { xvfb.killAndWait() }
            var display = ""
            eventually(timeout: 6) {
                display = ((try? String(contentsOfFile: number, encoding: .utf8)) ?? "").trimmingCharacters(
                    in: .whitespacesAndNewlines)
                return !display.isEmpty
            }
            xvfb.signal(SIGSTOP)
            _ = try cli(["set", "big", "--raw"], stdin: Data(repeating: UInt8(ascii: "x"), count: 100_000))
            // 75 is its own limit ending it; a hang would throw ProcessTimedOut after 30 s.
            let result = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": ":" + display, "WAYLAND_DISPLAY": nil]) { $1 }
            ) { try cli(["get", "big", "--clip"], timeout: 30) }
            #expect(result.status == 75, "\(result.stderr)")
        }
    }

    /// While the secret is on the clipboard, no process has it in its arguments or environment,
    /// and the command returned at once; the clearer lives on after the terminal closes.
    @Test func theSecretIsOnNoCommandLineAndTheClearerOutlivesTheTerminal() throws {
        try CLIBackend.vault.run {
            let secret = "unmistakable-\(UUID().uuidString)"
            _ = try cli(["set", "k"], input: secret)
            #expect(try run(["get", "k", "--clip", "--clear-after", "3"], on: .xclip).status == 0)
            // Had it waited for the clearer, the clipboard would be empty by now.
            #expect(try Self.clipboard(.xclip) == secret, "get --clip waited for the clearer")
            var seen: [String] = []
            for pid in try FileManager.default.contentsOfDirectory(atPath: "/proc") where Int(pid) != nil {
                for file in ["cmdline", "environ"] {
                    if let data = FileManager.default.contents(atPath: "/proc/\(pid)/\(file)"),
                        String(decoding: data, as: UTF8.self).contains(secret)
                    {
                        seen.append("\(pid)/\(file)")
                    }
                }
            }
            #expect(seen.isEmpty, "the secret is in \(seen)")
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 5))

            // Under a terminal that closes as soon as the command returns (SIGHUP to its group).
            let displays = try #require(Displays.current)
            let script = """
                set timeout 20
                spawn env DISPLAY=\(displays.x11) $env(KEYCHAIN_CLI) get k --clip --clear-after 3
                expect "cleared in 3 s"
                close
                wait
                """
            #expect(try expect(script).status == 0)
            #expect(try Self.clipboard(.xclip) == secret)
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 6), "the clearer died with the terminal")
        }
    }

    @Test func failuresSayWhatIsMissingAndStoreNothing() throws {
        try CLIBackend.vault.run {
            _ = try cli(["set", "bin", "--raw"], stdin: Data([0x61, 0, 0x62]))
            _ = try cli(["set", "latin1", "--raw"], stdin: Data([0xe9, 0x74, 0xe9]))
            for key in ["bin", "latin1"] {
                let binary = try run(["get", key, "--clip"], on: .xclip)
                #expect(binary.status == 65)
                #expect(binary.stderr.contains("binary and cannot go on the clipboard"))
            }
            _ = try cli(["set", "k"], input: "v")
            let noDisplay = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": nil, "WAYLAND_DISPLAY": nil]) { $1 }
            ) { try cli(["get", "k", "--clip"]) }
            #expect(noDisplay.status == 69)
            #expect(noDisplay.stderr.contains("neither WAYLAND_DISPLAY nor DISPLAY is set"))
            let noTool = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": ":0", "PATH": "/nonexistent"]) { $1 }
            ) { try cli(["get", "k", "--clip"]) }
            #expect(noTool.status == 69)
            #expect(noTool.stderr.contains("sudo apt install xclip"))
            let noWaylandTool = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": nil, "WAYLAND_DISPLAY": "wayland-9", "PATH": "/nonexistent"]) {
                    $1
                }
            ) { try cli(["get", "k", "--clip"]) }
            #expect(noWaylandTool.stderr.contains("sudo apt install wl-clipboard"))
            let gone = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": ":999", "WAYLAND_DISPLAY": nil]) { $1 }
            ) { try cli(["get", "k", "--clip"]) }
            #expect(gone.status == 69)
            #expect(gone.stderr.contains("Can't open display"))
            for arguments in [["--clear-after", "5"], ["--clip", "--clear-after", "0"], ["--clip", "--json"]] {
                #expect(try cli(["get", "k"] + arguments).status == 64, "\(arguments)")
            }
            // generate checks for a clipboard before it stores anything.
            let generated = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["DISPLAY": nil, "WAYLAND_DISPLAY": nil]) { $1 }
            ) { try cli(["generate", "new", "--clip"]) }
            #expect(generated.status == 69)
            #expect(try cli(["get", "new"]).status == 1)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func generateClipStoresAndCopiesTheSameSecret(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let result = try run(
                ["-s", s, "generate", "g", "--length", "40", "--clip", "--clear-after", "2"], on: .xclip)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            let stored = try cli(["-s", s, "get", "g"]).stdoutText
            #expect(stored.count == 40)
            #expect(try Self.clipboard(.xclip) == stored)
            #expect(try Self.waitForClipboard(nil, .xclip, seconds: 5))
        }
    }
}
