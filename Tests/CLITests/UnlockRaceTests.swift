import Foundation
import TestSupport
import Testing

/// The holder's writes against what races them, found by a second attack on the hardened holder:
/// a client that goes away, `lock` in the middle of a write, a vault path made a link, writes
/// that fill its workers, requests that promise more than they send, and a runtime directory
/// that is another user's.
@Suite("unlock: writes that race the holder")
struct UnlockRaceTests {
    typealias Place = UnlockPlace

    /// A `set` killed while its write waits for the vault's lock writes nothing, as a direct
    /// `set` interrupted so would.
    @Test func aWriteWhoseClientWentAwayWritesNothing() throws {
        let place = try Place()
        defer { place.finish() }
        let (writer, locker, release) = try UnlockHardeningTests().writeWaitingForTheVault(place)
        defer { locker.killAndWait() }
        let holder = try #require(place.holders().first)
        let idle = UnlockHardeningTests().threads(holder) - 1
        writer.signal(SIGKILL)
        writer.waitUntilExit()
        release()
        locker.waitUntilExit()
        #expect(eventually(timeout: 10) { UnlockHardeningTests().threads(holder) <= idle })
        #expect(UnlockHardeningTests().threads(holder) == idle)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret, "the holder goes on")
        #expect(try place.run(["get", "k"]).status == 1, "the interrupted write did not land")
    }

    /// The vault moved into another file and linked back while a write waited for its lock: the
    /// write reaches the file, and the link stays a link.
    @Test func aVaultLinkedMeanwhileStaysALink() throws {
        let place = try Place()
        defer { place.finish() }
        let (writer, locker, release) = try UnlockHardeningTests().writeWaitingForTheVault(place)
        defer { locker.killAndWait() }
        let target = place.scratch.path("real.age")
        try FileManager.default.moveItem(atPath: place.vault, toPath: target)
        try FileManager.default.createSymbolicLink(atPath: place.vault, withDestinationPath: "real.age")
        release()
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: place.vault)) == "real.age")
        #expect(try place.run(["--vault", target, "get", "k"], passphrase: true).stdoutText == "v")
    }

    /// `lock` at any moment of a write: the write either lands and its `set` exits 0, or does not
    /// land and its `set` exits 77 (its passphrase no longer held), never a failure that landed.
    @Test func lockDuringAWriteStopsItOrLetsItFinish() throws {
        let place = try Place()
        defer { place.finish() }
        let large = (0..<300).map { "K\($0)=" + String(repeating: "v", count: 100_000) }.joined(separator: "\n")
        #expect(try place.run(["import", "--format", "env"], passphrase: true, stdin: Data(large.utf8)).status == 0)
        for (index, delay) in [50_000, 150_000, 250_000, 350_000, 450_000].enumerated() {
            let unlocked = try place.run(["unlock"], passphrase: true)
            #expect(unlocked.status == 0, "unlock after a lock \(index): \(unlocked.stderr)")
            let writer = try UnlockHardeningTests().startCLI(
                place, ["--timeout", "20", "set", "k\(index)"], stdin: Data("v".utf8))
            usleep(useconds_t(delay))
            _ = try place.run(["lock"])
            writer.waitUntilExit()
            let landed = try place.run(["get", "k\(index)"], passphrase: true).status == 0
            #expect(
                writer.terminationStatus == 0 ? landed : writer.terminationStatus == 77 && !landed,
                "lock after \(delay) µs: set exited \(writer.terminationStatus), landed: \(landed)")
        }
    }

    /// 70 writes waiting for the vault's lock (sent by hand, as a client would) fill the writers'
    /// turns; a read is answered all the same, and lock too.
    @Test func writesWaitingForTheLockHoldNoReadUp() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let (locker, release) = try UnlockHardeningTests().holdVaultLock(place)
        defer { locker.killAndWait() }
        defer { release() }
        let sent = place.scratch.path("sent")
        let writers = """
            import base64, json, os, socket, struct, sys, time
            held = []
            for i in range(70):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                body = json.dumps({"use": {"vault": os.path.realpath(sys.argv[2]),
                    "deadline": time.monotonic() + 20, "operation": {"store": {"_0":
                    [{"service": "s", "key": f"w{i}", "secret": base64.b64encode(b"x").decode()}]}}}}).encode()
                s.sendall(struct.pack(">I", len(body)) + body); held.append(s)
            open(sys.argv[3], "w").close()
            time.sleep(30)
            """
        let clients = try startQuietly(
            "/usr/bin/python3", ["-c", writers, place.runtime + "/keychain-cli/holder.sock", place.vault, sent])
        defer { clients.killAndWait() }
        #expect(eventually(timeout: 4) { FileManager.default.fileExists(atPath: sent) })
        #expect(try place.run(["--timeout", "3", "get", "token"]).stdoutText == place.secret)
        let locked = try place.run(["--timeout", "3", "lock"])
        #expect(locked.status == 0 && locked.stderr.contains("1 vault is locked"), "\(locked.stderr)")
    }

    /// 500 connections each announce 300 MiB and send 2 MiB of it: the holder keeps no more than
    /// its bound of requests not yet whole (400 MiB), closing the connections past it.
    @Test func requestsNotYetWholeStayWithinTheBound() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let pid = try #require(place.holders().first)
        let sent = place.scratch.path("sent")
        // Sent a piece at a time to each in turn, so that every connection's request grows at once.
        let flood = """
            import select, socket, sys, time
            held = []
            for i in range(500):
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.setblocking(False)
                s.send((300 << 20).to_bytes(4, "big")); held.append([s, 0])
            piece = b"{" * 65536; started = time.time()
            while time.time() - started < 60 and any(sent < 2 << 20 for _, sent in held):
                moved = False
                for connection in held:
                    if connection[1] >= 2 << 20: continue
                    try:
                        connection[1] += connection[0].send(piece); moved = True
                    except BlockingIOError:
                        pass
                    except OSError:
                        connection[1] = 2 << 20
                if not moved:  # until one can take more
                    select.select([], [c for c, sent in held if sent < 2 << 20], [], 1)
            open(sys.argv[2], "w").close()
            time.sleep(30)
            """
        let before = memoryKiB(pid, "VmHWM")
        let clients = try startQuietly(
            "/usr/bin/python3", ["-c", flood, place.runtime + "/keychain-cli/holder.sock", sent])
        defer { clients.killAndWait() }
        #expect(eventually(timeout: 20) { FileManager.default.fileExists(atPath: sent) })
        #expect(try place.run(["--timeout", "5", "get", "token"]).stdoutText == place.secret)
        #expect(memoryKiB(pid, "VmHWM") - before < 450 << 10, "peak \(before) KiB, then \(memoryKiB(pid, "VmHWM")) KiB")
    }

    /// A plain user whose $XDG_RUNTIME_DIR is root's (su and sudo keep it): unlock and lock refuse
    /// it as not theirs (74), and say what to do.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func anotherUsersRuntimeDirectoryIsRefused() throws {
        let place = try Place(as: .nobody)
        defer { place.finish() }
        let roots = place.scratch.path("root-run")
        try FileManager.default.createDirectory(atPath: roots, withIntermediateDirectories: false)
        chmod(roots, 0o700)
        for arguments in [["unlock"], ["lock"]] {
            let refused = try place.run(arguments, passphrase: true, extra: ["XDG_RUNTIME_DIR": roots])
            #expect(refused.status == 74, "\(arguments): \(refused.stderr)")
            #expect(refused.stderr.contains("set XDG_RUNTIME_DIR to a private directory of yours"), "\(refused.stderr)")
        }
    }
}
