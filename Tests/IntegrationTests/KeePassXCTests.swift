import Foundation
import TestSupport
import Testing

/// keychain-cli's Secret Service backend against KeePassXC (Debian's 2.7.4), headless in a
/// private session (scripts/with-keepassxc), started once for the suite. What differs from
/// gnome-keyring: every Item.Delete answers with a prompt (performed at once), an empty search
/// matches nothing (the collections' Items list every item), a locked database hides its items
/// (77, not a miss), and a new item is announced once per property KeePassXC sets (one `created`
/// for watch).
@Suite("KeePassXC as the Secret Service", .serialized, .keepassxcSession)
struct KeePassXCTests {
    @Test func setGetReplaceDeleteResetAndList() throws {
        let s = uniqueService("kpxc")
        #expect(try cli(["-s", s, "set", "a"], input: "one").status == 0)
        #expect(try cli(["-s", s, "set", "b"], input: "two").status == 0)
        #expect(try cli(["-s", s, "set", "a"], input: "one again").status == 0)
        #expect(try cli(["-s", s, "get", "a"]).stdoutText == "one again")
        #expect(try cli(["-s", s, "get", "missing"]).status == 1)
        #expect(try cli(["-s", s, "list"]).stdoutText == "a\nb\n")
        let listed =
            try JSONSerialization.jsonObject(with: cli(["-s", s, "list", "--json"]).stdout) as? [[String: Any]]
        #expect(listed?.map { $0["label"] as? String } == ["\(s)/a (keychain-cli)", "\(s)/b (keychain-cli)"])
        #expect(listed?.allSatisfy { $0["created"] is String && $0["modified"] is String } == true)
        #expect(try cli(["-s", s, "delete", "b"]).status == 0)
        #expect(try cli(["-s", s, "get", "b"]).status == 1)
        #expect(try cli(["-s", s, "delete", "b"]).status == 1)
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText.contains("removed 1 secret"))
        #expect(try cli(["-s", s, "list"]).stdoutText == "")
    }

    @Test func exportImportAndEveryService() throws {
        let (s, t) = (uniqueService("kpxc"), uniqueService("kpxc"))
        #expect(try cli(["-s", s, "set", "k"], input: "v-s").status == 0)
        #expect(try cli(["-s", t, "set", "k"], input: "v-t").status == 0)
        let all = try cli(["list", "--all-services"]).stdoutText
        #expect(all.contains("\(s)\tk\n") && all.contains("\(t)\tk\n"))
        let exported = try cli(["-s", s, "export", "--yes"])
        #expect(exported.status == 0)
        #expect(try cli(["-s", s, "reset", "--yes"]).status == 0)
        let imported = try cli(["import"], stdin: exported.stdout)
        #expect(imported.stdoutText.contains("added 1"), "\(imported.stderr)")
        #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v-s")
    }

    @Test func secretToolAndPythonKeyringShareItemsWithUs() throws {
        let s = uniqueService("kpxc")
        #expect(try secretTool(["store", "--label=x", "service", s, "username", "st"], input: "from-st").status == 0)
        #expect(try cli(["-s", s, "get", "st"]).stdoutText == "from-st")
        #expect(try cli(["-s", s, "set", "kc"], input: "from-kc").status == 0)
        #expect(try secretTool(["lookup", "service", s, "username", "kc"]).stdoutText == "from-kc")
        #expect(try pythonKeyring(["set", s, "py"], input: "from-py\n").status == 0)
        #expect(try cli(["-s", s, "get", "py"]).stdoutText == "from-py")
        // Replacing from another process: KeePassXC 2.7.4 asks its user (Access Request) even so
        // configured; the dialog answerer allows it, as the user at the desktop would.
        #expect(try pythonKeyring(["set", s, "py"], input: "again\n").status == 0)
        #expect(try pythonKeyring(["get", s, "py"]).stdoutText == "again\n")
        #expect(try cli(["-s", s, "delete", "st"]).status == 0)
        #expect(try secretTool(["lookup", "service", s, "username", "st"]).status == 1)
    }

    @Test func doctorNamesKeePassXCAndItsLimits() throws {
        let doctor = try cli(["doctor"])
        #expect(doctor.status == 0, "\(doctor.stdoutText)")
        #expect(doctor.stdoutText.contains("is owned by keepassxc (pid "))
        #expect(doctor.stdoutText.contains("KeePassXC"))
        #expect(doctor.stdoutText.contains("✓ store, read and delete a probe item: ok"))
    }

    /// A locked database hides its items: a read, a listing, a deletion, a reset and doctor say it
    /// is locked (77), none that the item is missing; a read through the dialog KeePassXC shows
    /// for Unlock works once it is answered, and the item is still there.
    @Test func aLockedDatabaseIs77() throws {
        let s = uniqueService("kpxc")
        #expect(try cli(["-s", s, "set", "k"], input: "v").status == 0)
        try KeyringSession.current!.lockKeePassXC()
        let get = try cli(["-s", s, "get", "k"])
        #expect(get.status == 77)
        #expect(get.stderr.contains("locked"))
        #expect(try cli(["-s", s, "list"]).status == 77)
        #expect(try cli(["-s", s, "delete", "k"]).status == 77)
        #expect(try cli(["-s", s, "reset", "--yes"]).status == 77)
        #expect(try cli(["doctor"]).status == 77)
        let unlock = try runProcess(
            "/usr/bin/python3",
            ["-c", "import secretstorage; secretstorage.get_default_collection(secretstorage.dbus_init()).unlock()"],
            environment: KeyringSession.current!.environment, timeout: 30)
        #expect(unlock.status == 0, "\(unlock.stderr)")
        #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v")
    }

    /// watch sees another program's creation and deletion, once each: KeePassXC announces a new
    /// item with an ItemChanged per property it sets, which are no change.
    @Test func watchSeesAnotherProgramsWrites() throws {
        let s = uniqueService("kpxc")
        let watch = try WatchProcess(global: ["-s", s], service: s)
        defer { _ = watch.stop() }
        #expect(try secretTool(["store", "--label=x", "service", s, "username", "w"], input: "1").status == 0)
        #expect(watch.waitForLine(containing: "created \(s) w") != nil, "\(watch.stderr)")
        usleep(500_000)
        #expect(watch.consumeAll() == [])
        #expect(try cli(["-s", s, "delete", "w"]).status == 0)
        #expect(watch.waitForLine(containing: "deleted \(s) w") != nil, "\(watch.stderr)")
    }
}

/// KeePassXC set to ask before each deletion, and its user answering No: the deletion is refused
/// (77, as docs/backends/secret-service.md says), the items stay, and nothing reports them gone.
/// (libsecret's answer to the prompt did not tell a declined deletion from a done one: `delete`
/// exited 0 and `reset` counted the items it left.)
@Suite("KeePassXC's deletions declined at its prompt", .serialized, .keepassxcDecliningDeletions)
struct KeePassXCDeclinedDeletionTests {
    @Test func aDeclinedDeletionIs77AndKeepsTheItems() throws {
        let s = uniqueService("kpxc-no")
        for key in ["k", "k2"] { #expect(try cli(["-s", s, "set", key], input: "v").status == 0) }
        let delete = try cli(["--timeout", "20", "-s", s, "delete", "k"])
        #expect(delete.status == 77, "\(delete.stderr)")
        #expect(delete.stderr.contains("declined"), "\(delete.stderr)")
        let reset = try cli(["--timeout", "20", "-s", s, "reset", "--yes"])
        #expect(reset.status == 77, "\(reset.stderr)")
        #expect(try cli(["-s", s, "list"]).stdoutText == "k\nk2\n")
    }
}
