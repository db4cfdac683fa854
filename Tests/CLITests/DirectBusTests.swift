import Foundation
import TestSupport
import Testing

/// The Secret Service client speaks D-Bus itself when the bus is a Unix socket
/// (SecretServiceDirect.swift), and takes the GLib way otherwise. Every other suite meets the
/// direct way; here a bus address whose first entry cannot be reached sends the same commands the
/// GLib way (GIO then connects to the second), and both must agree on every item. Then buses that
/// misbehave: each gets its documented exit code and a bounded wait.
@Suite("The Secret Service client on the direct D-Bus connection, against the GLib way", .keyringSession)
struct DirectBusTests {
    /// The environment that sends keychain-cli the GLib way: the direct client opens only the
    /// first address of the list, which does not exist.
    private var glibWay: [String: String] {
        ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/keychain-cli-test;" + KeyringSession.current!.busAddress]
    }

    private func bothWays(_ arguments: [String], stdin: Data? = nil) throws -> (ProcessResult, ProcessResult) {
        (try cli(arguments, stdin: stdin), try cli(arguments, stdin: stdin, extra: glibWay))
    }

    @Test func eachWayReadsWhatTheOtherWrote() throws {
        let s = uniqueService()
        let values: [(String, Data)] = [
            ("plain", Data("v1".utf8)), ("binary", Data([0, 255, 10, 13, 0])), ("empty", Data()),
            ("large", Data((0..<100_000).map { UInt8($0 % 251) })),
        ]
        for (index, (key, value)) in values.enumerated() {
            // Written one way, overwritten the other, read back both ways.
            let (first, second) = index % 2 == 0 ? ([String: String](), glibWay) : (glibWay, [:])
            let flags = ["--raw", "--allow-empty"]
            #expect(try cli(["-s", s, "set", key] + flags, stdin: Data("old".utf8), extra: first).status == 0)
            #expect(try cli(["-s", s, "set", key] + flags, stdin: value, extra: second).status == 0)
            let (direct, glib) = try bothWays(["-s", s, "get", key, "--raw"])
            #expect(direct.status == 0 && direct.stdout == value, "\(key): \(direct.stderr)")
            #expect(glib.status == 0 && glib.stdout == value, "\(key): \(glib.stderr)")
        }
        let listed = try cli(["-s", s, "list"])
        #expect(listed.stdoutText.split(separator: "\n").sorted() == values.map { Substring($0.0) }.sorted())
        // Misses, and the JSON form, word for word alike.
        for arguments in [
            ["-s", s, "get", "missing"], ["-s", s, "get", "plain", "--json"], ["-s", s, "get", "bad\u{7}"],
        ] {
            let (direct, glib) = try bothWays(arguments)
            #expect(direct.status == glib.status && direct.stdout == glib.stdout && direct.stderr == glib.stderr)
        }
    }

    /// Listings, exports, look-ups and deletions agree word for word both ways, and what one way
    /// deletes the other no longer finds.
    @Test func listingsExportsAndDeletionsAgree() throws {
        let s = uniqueService()
        for key in ["a", "b", "c"] {
            #expect(try cli(["-s", s, "set", key], stdin: Data("value of \(key)".utf8)).status == 0)
        }
        for arguments in [["-s", s, "list"], ["-s", s, "list", "--json"], ["-s", s, "export", "--yes"]] {
            let (direct, glib) = try bothWays(arguments)
            #expect(
                direct.status == 0 && direct.stdout == glib.stdout, "\(arguments): \(direct.stderr) \(glib.stderr)")
            #expect(direct.stdoutText.contains("b"), "\(arguments)")
        }
        #expect(try cli(["-s", s, "delete", "a"], extra: glibWay).status == 0)
        #expect(try cli(["-s", s, "get", "a"]).status == 1, "deleted the GLib way, gone the direct way")
        #expect(try cli(["-s", s, "delete", "b"]).status == 0)
        #expect(
            try cli(["-s", s, "get", "b"], extra: glibWay).status == 1, "deleted the direct way, gone the GLib way")
        let (direct, glib) = try bothWays(["-s", s, "list"])
        #expect(direct.stdoutText == "c\n" && glib.stdoutText == "c\n")
        #expect(try cli(["-s", s, "reset", "--yes"], extra: glibWay).status == 0)
        #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
    }

    /// An item another tool stored under the same service and key, with an extra attribute, is
    /// read and updated in place both ways: one value for every tool.
    @Test func anItemOfAnotherToolIsUpdatedInPlace() throws {
        let s = uniqueService()
        var environment = cliEnvironment()
        let store = try runProcess(
            "/usr/bin/secret-tool", ["store", "--label=other", "service", s, "username", "k", "extra", "yes"],
            stdin: Data("theirs".utf8), environment: environment)
        #expect(store.status == 0, "\(store.stderr)")
        for (value, extra) in [("direct", [String: String]()), ("glib", glibWay)] {
            #expect(try cli(["-s", s, "set", "k"], stdin: Data(value.utf8), extra: extra).status == 0)
            environment = cliEnvironment()
            let lookup = try runProcess(
                "/usr/bin/secret-tool", ["lookup", "service", s, "username", "k", "extra", "yes"],
                environment: environment)
            #expect(lookup.stdoutText == value, "\(value)")
            let (direct, glib) = try bothWays(["-s", s, "get", "k", "-n"])
            #expect(direct.stdoutText == value && glib.stdoutText == value)
        }
        #expect(try cli(["-s", s, "list"]).stdoutText == "k\n", "still one item")
    }

    /// `watch` takes the same two ways: on our wire it subscribes to the service's signals
    /// itself, and its process runs no GDBus worker thread; the GLib way on GDBus, whose thread it
    /// then has. Either way it reports an item another process (secret-tool) creates, by signal:
    /// the poll of `Modified` is an hour away.
    @Test func watchSeesAnotherProcesssChangeBothWays() throws {
        for (way, extra) in [("direct", [String: String]()), ("glib", glibWay)] {
            let s = uniqueService()
            let watch = try WatchProcess(["--interval", "3600"], global: ["-s", s], extra: extra, service: s)
            let threads = threadNames(watch.process.pid)
            #expect(threads.contains("gdbus") == (way == "glib"), "\(way): \(threads)")
            let stored = try runProcess(
                "/usr/bin/secret-tool", ["store", "--label=x", "service", s, "username", "st"],
                stdin: Data("v".utf8), environment: cliEnvironment())
            #expect(stored.status == 0, "\(stored.stderr)")
            #expect(watch.waitForLine(containing: " \(s) ", timeout: 10)?.text == "created \(s) st", "\(way)")
            #expect(try #require(watch.stop()).status == 0, "\(way): \(watch.stderr)")
            _ = try cli(["-s", s, "reset", "--yes"])
        }
    }

    /// The session bus dying ends `watch` with 69 both ways, at once: its poll of `Modified` is an
    /// hour away, and a killed bus says nothing first (no NameOwnerChanged), so the watch learns it
    /// from its connection hanging up (on GDBus too, whose own thread reads the socket).
    @Test func theBusGoingAwayEndsWatchBothWays() throws {
        for way in ["direct", "glib"] {
            let session = try KeyringSession.start()
            defer { session.stop() }
            let extra =
                way == "glib"
                ? ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/kc-test;" + session.busAddress] : [:]
            let s = uniqueService()
            let watch = try WatchProcess(
                ["--interval", "3600"], global: ["-s", s], session: session, extra: extra, service: s)
            session.killBus()
            let result = try #require(watch.waitForExit(), "\(way): watch did not end")
            #expect(result.status == 69, "\(way): \(result.stderr)")
            #expect(result.stderr.contains("the session bus connection closed"), "\(way): \(result.stderr)")
        }
    }

    /// A bus that refuses us, says nothing, sends bytes that are not D-Bus, announces a message
    /// it never sends or sends it a byte at a time (--timeout counts from the last whole message,
    /// not the last byte), or hangs up: exit 69 (no bus, or the bus broke its protocol) or 75 (no
    /// answer within --timeout), in about the time asked for, and no secret anywhere.
    @Test(arguments: ["reject", "silent", "garbage", "huge", "hangup", "drip"])
    func aMisbehavingBus(mode: String) throws {
        let directory = try ScratchDirectory("fake-bus")
        defer { directory.remove() }
        let socketPath = directory.path("bus")
        let server = try startQuietly("/usr/bin/python3", ["-c", Self.fakeBus, socketPath, mode])
        defer { server.killAndWait() }
        eventually(timeout: 10) { FileManager.default.fileExists(atPath: socketPath) }
        // In about the time asked for: a process timeout of 10 times --timeout throws
        // ProcessTimedOut, and 75 says the limit was what ended the silent and huge cases.
        let result = try cli(
            ["--timeout", "2", "get", "k"], extra: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(socketPath)"], timeout: 20)
        let expected: Int32 = ["silent", "huge", "drip"].contains(mode) ? 75 : 69
        #expect(result.status == expected, "\(mode): \(result.status) \(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    /// The fake bus: answers the authentication (or refuses it), then misbehaves as `mode` says.
    private static let fakeBus = #"""
        import os, socket, struct, sys, threading, time
        path, mode = sys.argv[1], sys.argv[2]
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path + ".new"); os.rename(path + ".new", path); server.listen(8)
        def serve(client):
            data = b""
            while b"BEGIN\r\n" not in data:
                chunk = client.recv(4096)
                if not chunk: return
                data += chunk
                if mode == "reject" and b"AUTH" in data:
                    client.sendall(b"REJECTED EXTERNAL\r\n"); client.close(); return
            if mode == "silent": time.sleep(60); return
            client.sendall(b"OK 0123456789abcdef0123456789abcdef\r\n")
            if mode == "garbage": client.sendall(bytes(range(256)) * 16)
            if mode == "huge": client.sendall(b"l\x02\x01\x01" + struct.pack("<III", 100000000, 1, 8))
            if mode == "hangup": client.close(); return
            if mode == "drip":
                # A reply announced at 100,000 bytes, then one byte every 0.3 s: still no answer.
                client.sendall(b"l\x02\x01\x01" + struct.pack("<III", 100000, 1, 8))
                for _ in range(200):
                    time.sleep(0.3); client.sendall(b"\0")
            time.sleep(60)
        while True:
            client, _ = server.accept()
            threading.Thread(target=serve, args=(client,), daemon=True).start()
        """#
}

/// The names of a process's threads (`/proc/PID/task/*/comm`).
private func threadNames(_ pid: Int32) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.compactMap {
        try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
