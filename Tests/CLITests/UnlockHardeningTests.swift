import Foundation
import TestSupport
import Testing

/// The holder against what an outside attack found (issue 58): its memory as a plain user, a
/// bare `lock`, clients that never let go, a write racing `lock` or its own deadline, long
/// socket paths, connections it closed, a vault briefly gone, a stopped holder, a length prefix
/// that promises 400 MiB, and the directory it was started in.
@Suite("unlock: the holder under attack")
struct UnlockHardeningTests {
    typealias Place = UnlockPlace

    /// As root and as nobody: the holder's core dump filter is 0 and its /proc files are root's
    /// (not dumpable), it keeps no directory busy, and a gcore of it holds no secret it read.
    @Test(arguments: HolderUser.available)
    func theHoldersMemoryStaysOutOfCores(user: HolderUser) throws {
        let place = try Place(as: user)
        defer { place.finish() }
        let unlocked = try place.run(["unlock"], passphrase: true)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(!unlocked.stderr.contains("core dump filter"), "\(unlocked.stderr)")
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        let pid = try #require(place.holders().first)
        #expect(try String(contentsOfFile: "/proc/\(pid)/coredump_filter", encoding: .utf8) == "00000000\n")
        var info = stat()
        #expect(stat("/proc/\(pid)/coredump_filter", &info) == 0 && info.st_uid == 0, "not dumpable: root's")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd") == "/")
        guard geteuid() == 0 else { return }
        let core = place.scratch.path("holder")
        _ = try runProcess("/usr/bin/gcore", ["-o", core, "\(pid)"], environment: ["PATH": "/usr/bin:/bin"])
        let dumped = try Data(contentsOf: URL(fileURLWithPath: "\(core).\(pid)"))
        #expect(dumped.count > 0 && dumped.range(of: Data(place.secret.utf8)) == nil)
    }

    /// serve as nobody: its core dump filter is 0 too.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func serveAsAPlainUserClearsItsDumpFilter() throws {
        let place = try Place(as: .nobody)
        defer { place.finish() }
        let filter = place.scratch.path("filter")
        chmod(place.scratch.url.path, 0o777)
        let served = try place.run(
            [
                "serve", "--", "sh", "-c",
                "cat /proc/$PPID/coredump_filter > \"$0\"; stat -c %u /proc/$PPID/environ >> \"$0\"", filter,
            ],
            passphrase: true)
        #expect(served.status == 0, "\(served.stderr)")
        #expect(!served.stderr.contains("core dump filter"), "\(served.stderr)")
        #expect((try? String(contentsOfFile: filter, encoding: .utf8)) == "00000000\n0\n")
    }

    /// A bare `lock` locks every vault this user unlocked; `lock` of one vault names the others.
    @Test(arguments: HolderUser.available)
    func aBareLockLocksEveryVault(user: HolderUser) throws {
        let place = try Place(as: user)
        defer { place.finish() }
        let other = place.scratch.path("other.age")
        #expect(try place.run(["--vault", other, "set", "o"], passphrase: true, stdin: Data("x".utf8)).status == 0)
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        #expect(try place.run(["--vault", other, "unlock"], passphrase: true).status == 0)
        let one = try place.run(["--vault", other, "lock"])
        #expect(one.status == 0 && one.stderr.contains("is locked"), "\(one.stderr)")
        #expect(one.stderr.contains("still unlocked: '\(place.vault)'"), "\(one.stderr)")
        #expect(try place.run(["--vault", other, "unlock"], passphrase: true).status == 0)
        // $KEYCHAIN_VAULT set (relative, from another directory, as a job's step that cd'd) or not.
        let bare = try place.run(["lock"], extra: ["KEYCHAIN_VAULT": "v.age"])
        #expect(bare.status == 0 && bare.stderr.contains("2 vaults are locked"), "\(bare.stderr)")
        #expect(try place.run(["get", "token"]).status == 77)
        #expect(try place.run(["--vault", other, "get", "o"]).status == 77)
        #expect(try place.run(["--vault", other, "unlock"], passphrase: true).status == 0)
        #expect(try place.run(["lock"], namingVault: false).stderr.contains("1 vault is locked"))
    }

    /// 300 connections that send nothing, or half a length prefix: get and lock still get through.
    /// A vault turned into a FIFO is refused at once, not waited on.
    @Test func clientsThatHangOnHoldNoOneHostage() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let ready = place.scratch.path("connected")
        let hang = """
            import socket, sys, time
            held = []
            for i in range(300):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                if i % 2: s.send(b"\\x00\\x00")
                held.append(s)
            open(sys.argv[2], "w").close()
            time.sleep(60)
            """
        let hanging = try startQuietly(
            "/usr/bin/python3", ["-c", hang, place.runtime + "/keychain-cli/holder.sock", ready])
        defer { hanging.killAndWait() }
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }
        #expect(FileManager.default.fileExists(atPath: ready))
        #expect(try place.run(["--timeout", "5", "get", "token"]).stdoutText == place.secret)
        let moved = place.scratch.path("v.saved")
        try FileManager.default.moveItem(atPath: place.vault, toPath: moved)
        #expect(mkfifo(place.vault, 0o600) == 0)
        let fifo = try place.run(["--timeout", "5", "get", "token"])
        #expect(fifo.status == 74 && fifo.stderr.contains("not a regular file"), "\(fifo.stderr)")
        unlink(place.vault)
        try FileManager.default.moveItem(atPath: moved, toPath: place.vault)
        #expect(try place.run(["--timeout", "5", "get", "token"]).stdoutText == place.secret)
        let locked = try place.run(["--timeout", "5", "lock", "--all"])
        #expect(locked.status == 0 && locked.stderr.contains("1 vault is locked"), "\(locked.stderr)")
    }

    /// A write waiting for the vault's lock when `lock` comes writes nothing, then or later.
    @Test func lockStopsAWriteWaitingForTheVault() throws {
        let place = try Place()
        defer { place.finish() }
        let (writer, locker, release) = try writeWaitingForTheVault(place)
        defer { locker.killAndWait() }
        #expect(try place.run(["lock"]).stderr.contains("is locked"))
        release()
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 77, "it asks for the passphrase it no longer has")
        #expect(try place.run(["get", "k"], passphrase: true).status == 1, "the write did not land")
    }

    /// A write still under way at its caller's deadline is not committed: the caller's 75 means
    /// it did not happen. (The holder is stopped once it has taken the vault's lock, which a vault
    /// of 40 MB makes it keep long enough to be seen, until the caller has given up.)
    @Test func aWriteThatTimedOutNeverLands() throws {
        let place = try Place()
        defer { place.finish() }
        let large = (0..<400).map { "K\($0)=" + String(repeating: "v", count: 100_000) }.joined(separator: "\n")
        #expect(try place.run(["import", "--format", "env"], passphrase: true, stdin: Data(large.utf8)).status == 0)
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let pid = try #require(place.holders().first)
        let ready = place.scratch.path("watching")
        let stopper = """
            import fcntl, os, signal, sys
            fd = os.open(sys.argv[1], os.O_RDONLY)
            holder = os.pidfd_open(int(sys.argv[2]))  # (signals through it reach that process only)
            open(sys.argv[3], "w").close()
            while True:  # (no pause: the moment the lock is taken is a race to catch)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); fcntl.flock(fd, fcntl.LOCK_UN)
                except BlockingIOError:
                    signal.pidfd_send_signal(holder, signal.SIGSTOP); sys.stdin.buffer.read()
                    signal.pidfd_send_signal(holder, signal.SIGCONT)
                    break
            """
        // The holder stays stopped until the late write has given up (the test's release).
        let (watcher, release) = try startUntilReleased(
            "/usr/bin/python3", ["-c", stopper, place.scratch.url.path, "\(pid)", ready])
        defer { watcher.killAndWait() }
        defer { release() }
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }
        let late = try place.run(["--timeout", "2", "set", "k"], stdin: Data("late".utf8))
        #expect(late.status == 75 && late.stderr.contains("within 2 s"), "\(late.stderr)")
        release()
        watcher.waitUntilExit()
        #expect(try place.run(["get", "K1"]).status == 0, "the holder goes on")
        #expect(try place.run(["get", "k"]).status == 1, "a 75 never lands")
    }

    /// A socket path longer than a Unix address holds: unlock, get and lock work (through the
    /// directory's descriptor).
    @Test func aLongRuntimeDirectoryWorks() throws {
        let place = try Place(longRuntime: true)
        defer { place.finish() }
        #expect((place.runtime + "/keychain-cli/holder.sock").utf8.count > 108)
        let unlocked = try place.run(["unlock"], passphrase: true)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        #expect(try place.run(["lock"]).stderr.contains("is locked"))
    }

    /// A client whose connection the holder closed (here: the holder was replaced while `reset`
    /// waited at its prompt) connects again instead of asking for the passphrase.
    @Test func aConnectionClosedMeanwhileIsMadeAgain() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock", "--ttl", "none"], passphrase: true).status == 0)
        let driver = """
            import os, pty, signal, subprocess, sys, time
            env = dict(os.environ)
            pid, fd = pty.fork()
            if pid == 0:
                os.execve(sys.argv[1], [sys.argv[1], "reset"], env)
            seen = b""
            while b"Delete" not in seen:
                seen += os.read(fd, 1024)
            for p in os.listdir("/proc"):
                try:
                    # A pidfd first, then the check: the kill reaches the holder checked, never a
                    # process that got its pid.
                    holder = os.pidfd_open(int(p)) if p.isdigit() else None
                    if holder is not None and open(f"/proc/{p}/cmdline", "rb").read() == b"keychain-cli\\0holder\\0" \\
                            and f"XDG_RUNTIME_DIR={env['XDG_RUNTIME_DIR']}".encode() in open(f"/proc/{p}/environ", "rb").read():
                        signal.pidfd_send_signal(holder, 9)
                except OSError:
                    pass
            again = dict(env, KEYCHAIN_PASSPHRASE=sys.argv[2])
            subprocess.run([sys.argv[1], "unlock"], env=again, check=True, capture_output=True)
            os.write(fd, b"y\\n")
            out = b""
            try:
                while True:
                    chunk = os.read(fd, 1024)
                    if not chunk: break
                    out += chunk
            except OSError:
                pass
            _, status = os.waitpid(pid, 0)
            print(os.waitstatus_to_exitcode(status), out.decode(errors="replace"))
            """
        let environment = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            "XDG_RUNTIME_DIR": place.runtime, "PATH": "/usr/bin:/bin", "HOME": place.scratch.url.path,
        ]
        let driven = try runProcess(
            "/usr/bin/python3", ["-c", driver, keychainCLIPath, CLIBackend.passphrase], environment: environment)
        #expect(driven.stdoutText.hasPrefix("0 "), "\(driven.stdoutText) \(driven.stderr)")
        #expect(try place.run(["get", "token"], passphrase: true).status == 1, "reset went through the holder")
    }

    /// The vault moved away for a moment (a checkout of a branch without it) and back: still held.
    @Test func aVaultBrieflyMissingStaysUnlocked() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let moved = place.scratch.path("v.saved")
        try FileManager.default.moveItem(atPath: place.vault, toPath: moved)
        #expect(try place.run(["get", "token"]).status == 1, "no vault, no secret")
        try FileManager.default.moveItem(atPath: moved, toPath: place.vault)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
    }

    /// A stopped holder: get and set give up after --timeout, not later, and say so.
    @Test func aStoppedHolderTakesOnlyTheTimeout() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let pid = try #require(place.holders().first)
        signalVerified(pid, SIGSTOP) { place.isHolder(pid) }
        defer { signalVerified(pid, SIGCONT) { place.isHolder(pid) } }
        for arguments in [["--timeout", "1", "get", "token"], ["--timeout", "1", "set", "k"]] {
            let started = Date()
            let result = try place.run(arguments, stdin: Data("v".utf8))
            let took = Date().timeIntervalSince(started)
            #expect(result.status == 75 && result.stderr.contains("within 1 s"), "\(result.stderr)")
            // The bound is what is tested (a limit of 1 s must not wait as long as the stopped
            // holder stays stopped), so generous: 10 times the limit, not a speed target.
            #expect(took < 10, "\(arguments): \(took) s")
        }
    }

    /// A length prefix of 400 MiB followed by nothing: the holder allocates as bytes arrive.
    @Test func aLengthPrefixPinsNoMemory() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let pid = try #require(place.holders().first)
        let ready = place.scratch.path("sent")
        let promise = """
            import socket, sys, time
            held = []
            for _ in range(4):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                s.send(b"\\x18\\x00\\x00\\x00{"); held.append(s)
            open(sys.argv[2], "w").close()
            time.sleep(60)
            """
        let before = memoryKiB(pid, "VmRSS")
        let sender = try startQuietly(
            "/usr/bin/python3", ["-c", promise, place.runtime + "/keychain-cli/holder.sock", ready])
        defer { sender.killAndWait() }
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        #expect(
            memoryKiB(pid, "VmRSS") - before < 20_000, "resident \(before) KiB, then \(memoryKiB(pid, "VmRSS")) KiB")
    }

    /// Durations as ssh users type them; a unit out of order is refused.
    @Test func durationsReadAsSshAgentReadsThem() throws {
        let place = try Place()
        defer { place.finish() }
        for (given, shown) in [("1h30m", "for 90m"), ("1w", "for 1w"), ("90", "for 90s"), ("2d12h", "for 60h")] {
            let unlocked = try place.run(["unlock", "--ttl", given], passphrase: true)
            #expect(unlocked.status == 0 && unlocked.stderr.contains(shown), "\(given): \(unlocked.stderr)")
        }
        for bad in ["30m1h", "1h1h", "h", "1.5h", "31d", "0"] {
            let refused = try place.run(["unlock", "--ttl", bad], passphrase: true)
            #expect(refused.status == 64 && refused.stderr.contains("--ttl must be"), "\(bad): \(refused.stderr)")
        }
    }

    // MARK: Helpers

    /// A process holding the vault's lock (its directory's flock) until released.
    func holdVaultLock(_ place: Place) throws -> (ChildProcess, Release) {
        let ready = place.scratch.path("locked")
        let script = """
            import fcntl, os, sys
            fd = os.open(sys.argv[1], os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            open(sys.argv[2], "w").close()
            sys.stdin.buffer.read()
            """
        let (locker, release) = try startUntilReleased(
            "/usr/bin/python3", ["-c", script, place.scratch.url.path, ready])
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }
        return (locker, release)
    }

    /// `place`'s vault unlocked, its lock held by another process until released, and a
    /// `set k` through the holder (given 20 s) waiting for it: the holder's worker has started.
    func writeWaitingForTheVault(_ place: Place) throws -> (
        writer: ChildProcess, locker: ChildProcess, release: Release
    ) {
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let (locker, release) = try holdVaultLock(place)
        let holder = try #require(place.holders().first)
        let idle = threads(holder)
        let writer = try startCLI(place, ["--timeout", "20", "set", "k"], stdin: Data("v".utf8))
        eventually(timeout: 10) { threads(holder) != idle }
        return (writer, locker, release)
    }

    /// The threads of `pid`.
    func threads(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? 0
    }

    /// keychain-cli on `place`'s vault without waiting, given no passphrase.
    func startCLI(_ place: Place, _ arguments: [String], stdin: Data) throws -> ChildProcess {
        try UnlockTests().startCLI(
            arguments,
            environment: [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
                "XDG_RUNTIME_DIR": place.runtime,
            ], stdin: stdin)
    }
}
