import Foundation
import TestSupport
import Testing

/// The holder against other users and against reading its memory: another uid that reaches its
/// socket gets nothing, a socket another uid planted gets no key, and neither a core dump nor
/// swap gets what it holds.
@Suite("unlock: other users, planted sockets, the holder's memory")
struct UnlockAttackTests {
    typealias Place = UnlockTests.Place

    /// A client that sends a status request and says whether anything came back.
    static let probe = """
        import json, socket, struct, sys
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        body = json.dumps({"status": {}}).encode()
        try:
            s.sendall(struct.pack(">I", len(body)) + body)
            print("reply" if s.recv(4) else "closed")
        except (ConnectionResetError, BrokenPipeError):
            print("closed")
        """

    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func anotherUserGetsNothingFromTheHolder() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let socket = place.runtime + "/keychain-cli/holder.sock"
        // The directory keeps others out; opened up, the holder itself still refuses them.
        for path in [place.scratch.url.path, place.runtime, place.runtime + "/keychain-cli"] { chmod(path, 0o755) }
        chmod(socket, 0o777)
        let own = try runProcess(
            "/usr/bin/python3", ["-c", Self.probe, socket], environment: ["PATH": "/usr/bin:/bin"])
        #expect(own.stdoutText == "reply\n", "the probe gets an answer as the holder's uid: \(own.stderr)")
        let other = try runAsNobody(["/usr/bin/python3", "-c", Self.probe, socket])
        #expect(other.stdoutText == "closed\n", "\(other.stdoutText) \(other.stderr)")
        // keychain-cli as nobody, pointed at our runtime directory: not theirs, so not used.
        let binary = try place.scratch.openWithCopyOfCLI()
        chmod(place.vault, 0o644)
        let nobodyGet = try runAsNobody(
            [binary, "get", "token"],
            environment: ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "XDG_RUNTIME_DIR": place.runtime])
        #expect(nobodyGet.status == 77, "\(nobodyGet.stdoutText) \(nobodyGet.stderr)")
        #expect(!nobodyGet.stdoutText.contains(place.secret))
    }

    /// Another user's socket where the holder's should be: unlock refuses it (74) and sends it
    /// nothing; get passes it by.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func aSocketAnotherUserPlantedGetsNoKey() throws {
        let place = try Place()
        defer { place.finish() }
        let directory = place.runtime + "/keychain-cli"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        for path in [place.scratch.url.path, place.runtime, directory] { chmod(path, 0o777) }
        let record = place.scratch.path("planted.log")
        let server = """
            import os, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.bind(sys.argv[1]); s.listen(8)
            open(sys.argv[2] + ".ready", "w").close()
            while True:
                c, _ = s.accept()
                data = c.recv(65536)
                with open(sys.argv[2], "ab") as f: f.write(data)
                c.close()
            """
        let fake = try startQuietly(
            "/usr/bin/setpriv",
            [
                "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "/usr/bin/python3", "-c", server,
                directory + "/holder.sock", record,
            ])
        defer { fake.killAndWait() }
        eventually(timeout: 5) { FileManager.default.fileExists(atPath: record + ".ready") }
        chmod(directory, 0o700)
        let unlocked = try place.run(["unlock"], passphrase: true)
        #expect(unlocked.status == 74, "\(unlocked.stderr)")
        #expect(unlocked.stderr.contains("served by uid 65534, not by you"), "\(unlocked.stderr)")
        let got = try place.run(["get", "token"])
        #expect(got.status == 77, "\(got.stderr)")
        let received = FileManager.default.contents(atPath: record) ?? Data()
        #expect(received.isEmpty, "the planted socket got \(received.count) bytes")
    }

    /// The holder's memory: locked against swap (as root), its core dump filter 0, and a gcore
    /// of it, taken while it holds a read secret, without the secret; a control process's core
    /// with the same secret has it, so the search can fail.
    @Test(.enabled(if: geteuid() == 0, "VmLck and gcore of a non-dumpable process need root"))
    func theHoldersMemoryStaysOutOfSwapAndCores() throws {
        let place = try Place()
        defer { place.finish() }
        let unlocked = try place.run(["unlock"], passphrase: true)
        #expect(unlocked.status == 0 && !unlocked.stderr.contains("not locked"), "\(unlocked.stderr)")
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        let pid = try #require(place.holders().first)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let locked = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") }.map(String.init) ?? ""
        #expect(Int(locked.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0 > 0)
        #expect(try String(contentsOfFile: "/proc/\(pid)/coredump_filter", encoding: .utf8) == "00000000\n")
        let core = place.scratch.path("holder")
        _ = try runProcess("/usr/bin/gcore", ["-o", core, "\(pid)"], environment: ["PATH": "/usr/bin:/bin"])
        // The control holds the secret (read from a file, not given in its arguments) until
        // released, and says when it does.
        let (secret, holding) = (place.scratch.path("control-secret"), place.scratch.path("holding"))
        try Data(place.secret.utf8).write(to: URL(fileURLWithPath: secret))
        let (control, release) = try startUntilReleased(
            "/usr/bin/python3",
            [
                "-c", "import sys; s = open(sys.argv[1]).read() * 2; open(sys.argv[2], 'w').close(); sys.stdin.read()",
                secret, holding,
            ])
        defer { control.killAndWait() }
        defer { release() }
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: holding) })
        _ = try runProcess(
            "/usr/bin/gcore", ["-o", place.scratch.path("control"), "\(control.pid)"],
            environment: ["PATH": "/usr/bin:/bin"])
        let holderCore = try Data(contentsOf: URL(fileURLWithPath: "\(core).\(pid)"))
        let controlCore = try Data(
            contentsOf: URL(fileURLWithPath: place.scratch.path("control.\(control.pid)")))
        let needle = Data(place.secret.utf8)
        #expect(holderCore.count > 0 && holderCore.range(of: needle) == nil)
        #expect(controlCore.range(of: needle) != nil, "the control core should hold the secret")
    }

    /// A write the client gave up on (the holder stopped: 75) never lands later over a newer one;
    /// a write waits for the vault's lock as long as the caller's --timeout says.
    @Test func writesKeepToTheCallersTime() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let pid = try #require(place.holders().first)
        signalVerified(pid, SIGSTOP) { place.isHolder(pid) }
        let stalled = try place.run(["--timeout", "1", "set", "k"], stdin: Data("old".utf8))
        #expect(stalled.status == 75 && stalled.stderr.contains("did not answer"), "\(stalled.stderr)")
        #expect(try place.run(["set", "k"], passphrase: true, stdin: Data("new".utf8)).status == 0)
        signalVerified(pid, SIGCONT) { place.isHolder(pid) }
        usleep(500_000)  // (the stalled write's time to land, if it would: an absence, no event)
        #expect(try place.run(["get", "k"], passphrase: true).stdoutText == "new")
        // Another writer keeps the vault's lock (its directory's flock) for 3 seconds.
        let holdLock = """
            import fcntl, os, sys, time
            fd = os.open(sys.argv[1], os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            open(sys.argv[2], "w").close()
            time.sleep(3)
            """
        let ready = place.scratch.path("locked")
        let locker = try startQuietly("/usr/bin/python3", ["-c", holdLock, place.scratch.url.path, ready])
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }
        let short = try place.run(["--timeout", "1", "set", "k"], stdin: Data("short".utf8))
        #expect(short.status == 75, "\(short.stderr)")
        let long = try place.run(["--timeout", "10", "set", "k"], stdin: Data("long".utf8))
        #expect(long.status == 0, "\(long.stderr)")
        locker.waitUntilExit()
        #expect(eventually(timeout: 10) { (try? place.run(["get", "k"], passphrase: true).stdoutText) == "long" })
    }

    /// A holder whose socket is removed (its directory cleaned) can be reached by nobody: it ends,
    /// and the next unlock starts another.
    @Test func aHolderNobodyCanReachEnds() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock", "--ttl", "none"], passphrase: true).status == 0)
        #expect(place.holders().count == 1)
        try FileManager.default.removeItem(atPath: place.runtime + "/keychain-cli/holder.sock")
        #expect(eventually(timeout: 2) { place.holders().isEmpty })
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
    }

    /// A user who may not lock memory (nobody, RLIMIT_MEMLOCK 64 KiB): the holder runs unlocked
    /// and unlock says so once; the holder still serves.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func unlockSaysOnceWhenMemoryCannotBeLocked() throws {
        let scratch = try ScratchDirectory("unlock-nobody")
        defer { scratch.remove() }
        let binary = try scratch.openWithCopyOfCLI()
        let environment = [
            "HOME": scratch.url.path, "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": scratch.path("v.age"),
            "KEYCHAIN_VAULT_WORK_FACTOR": "10", "XDG_RUNTIME_DIR": scratch.path("run"),
        ]
        func run(_ arguments: [String], passphrase: Bool = false) throws -> ProcessResult {
            var environment = environment
            if passphrase { environment["KEYCHAIN_PASSPHRASE"] = CLIBackend.passphrase }
            return try runAsNobody(
                ["prlimit", "--memlock=65536:65536", binary] + arguments, environment: environment)
        }
        try FileManager.default.createDirectory(atPath: scratch.path("run"), withIntermediateDirectories: false)
        _ = try runProcess("/bin/chown", ["nobody", scratch.path("run")], environment: [:])
        chmod(scratch.path("run"), 0o700)
        let stored = try runAsNobody(
            ["sh", "-c", "printf s | \"$0\" set k", binary],
            environment: environment.merging(["KEYCHAIN_PASSPHRASE": CLIBackend.passphrase]) { $1 })
        #expect(stored.status == 0, "\(stored.stderr)")
        let unlocked = try run(["unlock"], passphrase: true)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(unlocked.stderr.components(separatedBy: "not locked against swap").count == 2, "\(unlocked.stderr)")
        #expect(unlocked.stderr.contains("RLIMIT_MEMLOCK is 64 KiB"))
        #expect(try run(["get", "k"]).stdoutText == "s")
        #expect(try run(["lock", "--all"]).status == 0)
    }
}
