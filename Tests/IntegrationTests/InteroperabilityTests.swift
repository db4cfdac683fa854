import Foundation
import TestSupport
import Testing

func secretTool(_ arguments: [String], input: String? = nil) throws -> ProcessResult {
    try runProcess(
        "/usr/bin/secret-tool", arguments, stdin: input.map { Data($0.utf8) },
        environment: KeyringSession.current!.environment)
}

func pythonKeyring(_ arguments: [String], input: String? = nil) throws -> ProcessResult {
    // Debian's python3-keyring, with Debian's python (not whatever python3 is first on PATH).
    try runProcess(
        "/usr/bin/python3", ["-m", "keyring"] + arguments, stdin: input.map { Data($0.utf8) },
        environment: KeyringSession.current!.environment)
}

@Suite("Interoperability with secret-tool and python keyring", .keyringSession)
struct InteroperabilityTests {
    @Test func itemStoredBySecretToolIsReadByUs() throws {
        let s = uniqueService()
        #expect(
            try secretTool(["store", "--label=x", "service", s, "username", "K"], input: "from-secret-tool").status == 0
        )
        let got = try cli(["-s", s, "get", "K"])
        #expect(got.status == 0)
        #expect(got.stdoutText == "from-secret-tool")
        #expect(try cli(["-s", s, "list"]).stdoutText == "K\n")
    }

    @Test func itemWeStoreIsReadBySecretTool() throws {
        let s = uniqueService()
        #expect(try cli(["-s", s, "set", "K"], input: "from-keychain-cli").status == 0)
        let lookup = try secretTool(["lookup", "service", s, "username", "K"])
        #expect(lookup.status == 0)
        #expect(lookup.stdoutText == "from-keychain-cli")
        let search = try secretTool(["search", "--all", "service", s])
        // secret-tool prints the attributes on stderr.
        #expect(search.stderr.contains("attribute.application = keychain-cli"))
        #expect(search.stderr.contains("attribute.service = \(s)"))
        #expect(search.stderr.contains("attribute.username = K"))
        #expect(search.stdoutText.contains("schema = org.freedesktop.Secret.Generic"))
        #expect(search.stdoutText.contains("label = \(s)/K (keychain-cli)"))
    }

    @Test func itemStoredByPythonKeyringIsReadByUs() throws {
        let s = uniqueService()
        let set = try pythonKeyring(["set", s, "K"], input: "from-python\n")
        #expect(set.status == 0, "\(set.stderr)")
        let got = try cli(["-s", s, "get", "K"])
        #expect(got.stdoutText == "from-python")
        let items =
            try JSONSerialization.jsonObject(with: cli(["-s", s, "list", "--json"]).stdout) as! [[String: String]]
        #expect(items.first?["application"] == "Python keyring library")
    }

    @Test func itemWeStoreIsReadByPythonKeyring() throws {
        let s = uniqueService()
        #expect(try cli(["-s", s, "set", "K"], input: "for-python").status == 0)
        let got = try pythonKeyring(["get", s, "K"])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(got.stdoutText == "for-python\n")
    }

    @Test func settingAnItemAnotherToolStoredUpdatesItInPlace() throws {
        let s = uniqueService()
        _ = try secretTool(["store", "--label=theirs", "service", s, "username", "K"], input: "old")
        _ = try pythonKeyring(["set", s, "P"], input: "old\n")
        #expect(try cli(["-s", s, "set", "K"], input: "new-k").status == 0)
        #expect(try cli(["-s", s, "set", "P"], input: "new-p").status == 0)
        #expect(try secretTool(["lookup", "service", s, "username", "K"]).stdoutText == "new-k")
        #expect(try pythonKeyring(["get", s, "P"]).stdoutText == "new-p\n")
        // No duplicates: one item per key, still carrying the other tool's label.
        let search = try secretTool(["search", "--all", "service", s]).stdoutText
        #expect(search.components(separatedBy: "label = ").count - 1 == 2)
        #expect(search.contains("label = theirs"))
    }

    @Test func listJSONShowsTheLabelAndTimesTheKeyringKeeps() throws {
        let s = uniqueService()
        _ = try secretTool(["store", "--label=their label", "service", s, "username", "K"], input: "old")
        Thread.sleep(forTimeInterval: 1.2)  // the keyring's times count whole seconds
        #expect(try cli(["-s", s, "set", "K"], input: "new").status == 0)
        let items =
            try JSONSerialization.jsonObject(with: cli(["-s", s, "list", "--json"]).stdout) as! [[String: String]]
        #expect(items.count == 1)
        let item = try #require(items.first)
        #expect(item["label"] == "their label")
        let created = try #require(item["created"])
        let modified = try #require(item["modified"])
        #expect(created < modified, "\(item)")
    }

    @Test func deleteAndResetRemoveOtherToolsItemsToo() throws {
        let s = uniqueService()
        _ = try secretTool(["store", "--label=x", "service", s, "username", "A"], input: "a")
        _ = try pythonKeyring(["set", s, "B"], input: "b\n")
        #expect(try cli(["-s", s, "delete", "A"]).status == 0)
        #expect(try secretTool(["lookup", "service", s, "username", "A"]).status != 0)
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText == "removed 1 secret of service '\(s)'\n")
        #expect(try pythonKeyring(["get", s, "B"]).stdoutText.isEmpty)
    }

    @Test func binaryItemRoundTripsWithSecretTool() throws {
        let s = uniqueService()
        let bytes = Data([0xff, 0x00, 0x41, 0x0a])
        #expect(try cli(["-s", s, "set", "bin", "--raw"], stdin: bytes).status == 0)
        // secret-tool prints the stored bytes as they are.
        let lookup = try secretTool(["lookup", "service", s, "username", "bin"])
        #expect(lookup.stdout == bytes)
    }
}

@Suite("Backend failures, each with its exit code and fix")
struct BackendFailureTests {
    @Test func busWithoutASecretServiceExits69() throws {
        let session = try KeyringSession.start(.none)
        defer { session.stop() }
        for arguments in [["get", "k"], ["list"], ["delete", "k"]] {
            let result = try cli(arguments, session: session)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("no Secret Service provider"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("gnome-keyring-daemon --unlock"))
        }
        let set = try cli(["set", "k"], input: "v", session: session)
        #expect(set.status == 69)
    }

    @Test func keyringWithoutADefaultCollectionExits69() throws {
        let session = try KeyringSession.start(.noLoginCollection)
        defer { session.stop() }
        let result = try cli(["set", "k"], input: "v", session: session)
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("no default keyring"), "\(result.stderr)")
        // Reading still works: nothing is there.
        #expect(try cli(["get", "k"], session: session).status == 1)
    }

    @Test func keyringThatNeverAnswersTimesOutWithExit75() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        #expect(try cli(["set", "k"], input: "v", session: session).status == 0)
        session.freezeDaemon()
        for (arguments, input) in [(["get", "k"], ""), (["set", "k"], "w"), (["list"], ""), (["delete", "k"], "")] {
            let started = Date()
            let result = try cli(["--timeout", "1"] + arguments, input: input, session: session)
            let elapsed = Date().timeIntervalSince(started)
            #expect(result.status == 75, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("keychain-cli: timed out after 1 s waiting for the Secret Service to "))
            // (It waited its limit; the message says which: no upper bound on a loaded machine.)
            #expect(elapsed >= 1, "\(arguments) took \(elapsed) s")
        }
    }

    @Test func lockedKeyringIsReportedAsLockedNotAsMissing() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        #expect(try cli(["set", "k"], input: "v", session: session).status == 0)
        try session.lockLogin()
        // No prompter can show on this bus: the unlock fails at once, and every command says so.
        for (arguments, input) in [
            (["get", "k"], ""), (["set", "k2"], "w"), (["set", "k"], "w"), (["delete", "k"], ""),
            (["reset", "--yes"], ""),
        ] {
            let result = try cli(["--timeout", "5"] + arguments, input: input, session: session)
            #expect(result.status == 77, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("keychain-cli: the keyring is locked"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains("--unlock"))
        }
        // A key that is not there at all is still "not found".
        #expect(try cli(["get", "absent"], session: session).status == 1)
        // Listing needs no unlock and still works; the locked item was not deleted.
        #expect(try cli(["list"], session: session).stdoutText == "k\n")
    }
}
