import Foundation
import TestSupport
import Testing

/// Runs Debian's python (which has python3-keyring and secretstorage) on `script` in the suite's
/// keyring session.
private func python(_ script: String) throws -> ProcessResult {
    try runProcess("/usr/bin/python3", ["-c", script], environment: KeyringSession.current!.environment)
}

@Suite("watch against gnome-keyring, with secret-tool and python keyring writing", .keyringSession)
struct WatchInteropTests {
    /// Each write by another tool is reported by the service's signal, promptly after the writer's
    /// exit: the poll of `Modified` is an hour away, so no line can come from it (a poll could
    /// also report an item once more if its `Modified` moved after the signal was handled). The
    /// bound leaves room for a loaded CI machine; a line by signal comes in milliseconds when idle.
    @Test func changesBySecretToolAndPythonKeyringAreReportedBySignal() throws {
        let s = uniqueService()
        let watch = try WatchProcess(["--interval", "3600"], global: ["-s", s], service: s)
        let writes: [(expected: String, write: () throws -> ProcessResult)] = [
            (
                "created \(s) st",
                { try secretTool(["store", "--label=x", "service", s, "username", "st"], input: "a") }
            ),
            (
                "changed \(s) st",
                { try secretTool(["store", "--label=x", "service", s, "username", "st"], input: "b") }
            ),
            ("deleted \(s) st", { try secretTool(["clear", "service", s, "username", "st"]) }),
            ("created \(s) py", { try pythonKeyring(["set", s, "py"], input: "c\n") }),
            ("changed \(s) py", { try pythonKeyring(["set", s, "py"], input: "d\n") }),
            ("deleted \(s) py", { try pythonKeyring(["del", s, "py"]) }),
            ("created \(s) kc", { try cli(["-s", s, "set", "kc"], input: "e") }),
            ("changed \(s) kc", { try cli(["-s", s, "set", "kc"], input: "f") }),
            ("deleted \(s) kc", { try cli(["-s", s, "delete", "kc"]) }),
        ]
        for (expected, write) in writes {
            let result = try write()
            #expect(result.status == 0, "\(expected): \(result.stderr)")
            let line = watch.waitForLine(containing: " \(s) ", timeout: 5)
            #expect(line?.text == expected)
        }
        #expect(try #require(watch.stop()).status == 0)
    }

    /// A client that only calls Item.SetSecret makes gnome-keyring send no signal: the poll of
    /// `Modified` reports it.
    @Test func setSecretAloneIsReportedByThePollOfModified() throws {
        let s = uniqueService()
        #expect(try pythonKeyring(["set", s, "k"], input: "before\n").status == 0)
        let watch = try WatchProcess(["--interval", "0.5"], global: ["-s", s], service: s)
        // Modified counts whole seconds: a change in the creation's second would not move it.
        Thread.sleep(forTimeInterval: 1.1)
        let result = try python(
            """
            import secretstorage
            bus = secretstorage.dbus_init()
            item = next(secretstorage.get_default_collection(bus).search_items({"service": "\(s)", "username": "k"}))
            item.set_secret(b"after")
            """)
        #expect(result.status == 0, "\(result.stderr)")
        let line = watch.waitForLine(containing: " \(s) ", timeout: 5)
        #expect(line?.text == "changed \(s) k")
        #expect(try #require(watch.stop()).status == 0)
    }

    /// keychain-cli's `set` of an existing item (a SetSecret, which gnome-keyring does not signal)
    /// announces itself: reported at once with the poll an hour away, and each of two changes in
    /// the same second (which `Modified` could not tell apart) is reported.
    @Test func keychainCLIsOwnSetSecretIsReportedByItsSignal() throws {
        let s = uniqueService()
        #expect(try cli(["-s", s, "set", "k"], input: "first").status == 0)
        let watch = try WatchProcess(["--interval", "3600"], global: ["-s", s], service: s)
        for value in ["second", "third"] {
            #expect(try cli(["-s", s, "set", "k"], input: value).status == 0)
            let line = watch.waitForLine(containing: " \(s) ", timeout: 5)
            #expect(line?.text == "changed \(s) k", "after setting \(value)")
        }
        #expect(try cli(["-s", s, "get", "k"]).stdoutText == "third")
        #expect(try #require(watch.stop()).status == 0)
    }

    /// The poll asks 25 items at a time, in turn: SetSecret on each of 40 items is still reported.
    @Test func thePollGoesThroughEveryItemOfALargeService() throws {
        let s = uniqueService()
        let created = try python(
            """
            import secretstorage
            collection = secretstorage.get_default_collection(secretstorage.dbus_init())
            for i in range(40):
                collection.create_item("x", {"service": "\(s)", "username": "k%02d" % i}, b"before")
            """)
        #expect(created.status == 0, "\(created.stderr)")
        let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s], service: s)
        Thread.sleep(forTimeInterval: 1.1)  // Modified counts whole seconds
        let result = try python(
            """
            import secretstorage
            collection = secretstorage.get_default_collection(secretstorage.dbus_init())
            for item in collection.search_items({"service": "\(s)"}):
                item.set_secret(b"after")
            """)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = watch.nextLines(40, timeout: 15)
        #expect(Set(lines) == Set((0..<40).map { "changed \(s) k\(String(format: "%02d", $0))" }))
        #expect(try #require(watch.stop()).status == 0)
    }

    /// The keyring daemon goes away: the documented code (69) and what to do.
    @Test func secretServiceLeavingEndsTheWatchWith69() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        let s = uniqueService()
        let watch = try WatchProcess(global: ["-s", s], session: session, service: s)
        session.stop()
        let result = try #require(watch.waitForExit())
        #expect(result.status == 69, "\(result.stderr)")
        #expect(
            result.stderr.contains("left the session bus") || result.stderr.contains("session bus connection closed"))
    }
}
