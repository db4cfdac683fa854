import Foundation
import TestSupport
import Testing

/// keychain-cli's Secret Service backend against KWallet (Debian's kwalletd5 5.103), headless in
/// a private session (scripts/with-kwallet), started once for the suite. What differs from
/// gnome-keyring: the encrypted session (kwalletd5 refuses a client public value under 128 bytes,
/// reads one that begins with 0xFF as signed, and hashes a shared value that begins with a zero
/// byte without it), and that kwalletd5 creates an item before it decrypts its secret, so a secret
/// that does not decrypt leaves an item with an empty one.
@Suite("KWallet as the Secret Service", .serialized, .kwalletSession)
struct KWalletTests {
    @Test func setGetReplaceDeleteResetListExportAndImport() throws {
        let (s, t) = (uniqueService("kw"), uniqueService("kw"))
        #expect(try cli(["-s", s, "set", "a"], input: "one").status == 0)
        #expect(try cli(["-s", s, "set", "b"], input: "two").status == 0)
        #expect(try cli(["-s", s, "set", "a"], input: "one again").status == 0)
        #expect(try cli(["-s", s, "get", "a"]).stdoutText == "one again")
        #expect(try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255, 10, 13])).status == 0)
        #expect(try cli(["-s", s, "get", "bin", "--raw"]).stdout == Data([0, 255, 10, 13]))
        #expect(try cli(["-s", s, "get", "missing"]).status == 1)
        #expect(try cli(["-s", s, "list"]).stdoutText == "a\nb\nbin\n")
        let listed =
            try JSONSerialization.jsonObject(with: cli(["-s", s, "list", "--json"]).stdout) as? [[String: Any]]
        #expect(
            listed?.map { $0["label"] as? String } == [
                "\(s)/a (keychain-cli)", "\(s)/b (keychain-cli)", "\(s)/bin (keychain-cli)",
            ])
        #expect(try cli(["-s", t, "set", "k"], input: "v-t").status == 0)
        let all = try cli(["list", "--all-services"]).stdoutText
        #expect(all.contains("\(s)\ta\n") && all.contains("\(t)\tk\n"))
        #expect(try cli(["-s", s, "delete", "b"]).status == 0)
        #expect(try cli(["-s", s, "get", "b"]).status == 1)
        #expect(try cli(["-s", s, "delete", "b"]).status == 1)
        let exported = try cli(["-s", s, "export", "--yes"])
        #expect(exported.status == 0)
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText.contains("removed 2 secrets"))
        #expect(try cli(["-s", s, "list"]).stdoutText == "")
        let imported = try cli(["import"], stdin: exported.stdout)
        #expect(imported.stdoutText.contains("added 2"), "\(imported.stderr)")
        #expect(try cli(["-s", s, "get", "a"]).stdoutText == "one again")
        #expect(try cli(["-s", s, "get", "bin", "--raw"]).stdout == Data([0, 255, 10, 13]))
    }

    /// The issue's measure: before, 8 of 800 and 16 of 600 such rounds failed on kwalletd5 (about
    /// one encrypted session in 100 is refused or derives another key). One shell loop, so that
    /// the rounds are the CLI's, not the test runner's.
    @Test func aThousandSetGetRoundsAllSucceed() throws {
        let script = """
            failed=0
            for i in $(seq 1000); do
                value="v-$i-$RANDOM"
                printf '%s' "$value" | "$KEYCHAIN_CLI" -s loop set "k$((i % 7))" 2>>"$LOG" || { failed=$((failed + 1)); continue; }
                got=$("$KEYCHAIN_CLI" -s loop get "k$((i % 7))" 2>>"$LOG") || { failed=$((failed + 1)); continue; }
                [ "$got" = "$value" ] || { failed=$((failed + 1)); echo "round $i: got '$got'" >>"$LOG"; }
            done
            echo "$failed"
            """
        let scratch = try ScratchDirectory("kwallet-loop")
        let log = scratch.path("errors.log")
        var environment = cliEnvironment()
        environment["KEYCHAIN_CLI"] = keychainCLIPath
        environment["LOG"] = log
        let result = try runProcess("/bin/bash", ["-c", script], environment: environment, timeout: 900)
        let errors = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(result.stdoutText == "0\n", "\(errors.split(separator: "\n").prefix(5))")
        #expect(try cli(["-s", "loop", "list"]).stdoutText == (0..<7).map { "k\($0)\n" }.joined())
    }

    /// One `import` stores every item in one process and one kept session, each item created
    /// anew: before, 2 of 150 such imports lost an item to an empty secret.
    @Test func anImportOf300ItemsStoresEveryOneWhole() throws {
        let s = uniqueService("kw")
        let lines = (0..<300).map { "K\($0)=secret-\($0)-\(UUID().uuidString)" }
        let imported = try cli(["-s", s, "import", "--format", "env"], input: lines.joined(separator: "\n") + "\n")
        #expect(imported.status == 0, "\(imported.stderr)")
        let exported = try cli(["-s", s, "export", "--yes", "--format", "env"])
        #expect(exported.status == 0, "\(exported.stderr)")
        // export writes each value quoted: K0="secret-0-…".
        let missing = Set(lines.map { $0.replacing("=", with: "=\"", maxReplacements: 1) + "\"" })
            .subtracting(exported.stdoutText.split(separator: "\n").map(String.init))
        #expect(missing.isEmpty, "\(missing.count) of 300 not exported as imported: \(missing.sorted().prefix(3))")
    }

    /// kwalletd5 removes an item's secret before the item: a read racing a delete got an empty
    /// secret and exit 0 (the outside attack's break 1, 4 times in 10 s), and `export` and `exec
    /// --from` exited 69, since kwalletd5 answers a GetSecrets naming a deleted item with
    /// InvalidArgs (break 2). Now the item is gone, as on gnome-keyring: never an empty secret.
    @Test func readsRacingDeletesSeeTheSecretOrNothing() throws {
        let s = uniqueService("kw")
        let script = """
            end=$((SECONDS + 6))
            ( while [ $SECONDS -lt $end ]; do
                "$K" -s "$S" delete --ignore-missing tok; printf val | "$K" -s "$S" set tok || echo "set $?"
            done ) &
            ( while [ $SECONDS -lt $end ]; do
                for i in 1 2 3 4 5 6 7 8; do printf 'v%s' "$i" | "$K" -s "$S" set "k$i"; done
                for i in 1 2 3 4 5 6 7 8; do "$K" -s "$S" delete "k$i"; done
            done ) &
            reads=0
            while [ $SECONDS -lt $end ]; do
                v=$("$K" -s "$S" get tok 2>/dev/null); r=$?
                { [ $r = 0 ] && [ "$v" = val ]; } || [ $r = 1 ] || echo "get $r '$v'"
                "$K" -s "$S" export --yes >/dev/null 2>"$ERR" || echo "export $?: $(cat "$ERR")"
                # 1: every item was deleted at that moment (--from gives no secret).
                "$K" exec --from "$S" -- true 2>"$ERR"; r=$?
                [ $r = 0 ] || [ $r = 1 ] || echo "exec --from $r: $(cat "$ERR")"
                reads=$((reads + 1))
            done
            wait
            echo "reads: $reads"
            """
        let scratch = try ScratchDirectory("kwallet-race")
        var environment = cliEnvironment()
        environment["K"] = keychainCLIPath
        environment["S"] = s
        environment["ERR"] = scratch.path("err")
        let result = try runProcess("/bin/bash", ["-c", script], environment: environment, timeout: 120)
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("reads: ") == true, "\(lines.prefix(5))")
        #expect(Int(lines.last?.dropFirst(7) ?? "") ?? 0 > 5, "too few reads to race")
    }

    /// Both ways with the peers: secret-tool (libsecret) and python keyring (SecretStorage). Each
    /// peer's own session fails on kwalletd5 about once in 100 (theirs, not ours): a peer's
    /// command that failed so is run again, and said so (``peer(_:)``).
    @Test func secretToolAndPythonKeyringShareItemsWithUs() throws {
        let s = uniqueService("kw")
        #expect(
            try peer { try secretTool(["store", "--label=x", "service", s, "username", "st"], input: "from-st") }.status
                == 0)
        #expect(try cli(["-s", s, "get", "st"]).stdoutText == "from-st")
        #expect(try cli(["-s", s, "set", "kc"], input: "from-kc").status == 0)
        #expect(try peer { try secretTool(["lookup", "service", s, "username", "kc"]) }.stdoutText == "from-kc")
        #expect(try peer { try pythonKeyring(["set", s, "py"], input: "from-py\n") }.status == 0)
        #expect(try cli(["-s", s, "get", "py"]).stdoutText == "from-py")
        #expect(try cli(["-s", s, "set", "py"], input: "replaced").status == 0)
        #expect(try peer { try pythonKeyring(["get", s, "py"]) }.stdoutText == "replaced\n")
        #expect(try cli(["-s", s, "delete", "st"]).status == 0)
        #expect(try peer { try secretTool(["lookup", "service", s, "username", "st"]) }.status == 1)
    }

    @Test func gitAndDockerHelpersStoreGetAndErase() throws {
        let host = "\(uniqueService("git")).example"
        let approve = try git(
            ["credential", "approve"],
            input: credentialLines(["protocol": "https", "host": host, "username": "al", "password": "gp"]))
        #expect(approve.status == 0, "\(approve.stderr)")
        let fill = try git(["credential", "fill"], input: credentialLines(["protocol": "https", "host": host]))
        #expect(fill.stdoutText.contains("username=al\npassword=gp\n"), "\(fill.stderr)")
        #expect(try peer { try secretTool(["lookup", "protocol", "https", "server", host]) }.stdoutText == "gp")
        _ = try git(
            ["credential", "reject"],
            input: credentialLines(["protocol": "https", "host": host, "username": "al", "password": "gp"]))
        #expect(try peer { try secretTool(["lookup", "protocol", "https", "server", host]) }.status == 1)

        let registry = "https://\(uniqueService("reg")).example"
        let store = try dockerHelper("store", #"{"ServerURL":"\#(registry)","Username":"du","Secret":"ds"}"#)
        #expect(store.status == 0, "\(store.stderr)")
        #expect(try dockerHelper("get", registry).stdoutText.contains(#""Secret":"ds""#))
        #expect(try dockerHelper("list", "").stdoutText.contains(#""\#(registry)":"du""#))
        #expect(try dockerHelper("erase", registry).status == 0)
        #expect(try dockerHelper("get", registry).status != 0)
    }

    /// Facts of kwalletd5 5.103, each a case of Tests/clients/session_edges.py (which serve passes
    /// whole, as gnome-keyring does): a client value of 127 bytes is refused; one beginning with
    /// 0xFF and a byte of 0x80 or more is read as a signed number (QCA); a shared value that
    /// begins with zero is hashed without that byte (OpenSSL's DH_compute_key). In the last two
    /// the secret does not decrypt, and kwalletd5 says it cannot find the session. keychain-cli
    /// sends none of these (SecretSessionTests). Should a later kwalletd5 change, this test says so.
    @Test func kwalletdsSessionQuirksAreAsMeasured() throws {
        var environment = KeyringSession.current!.environment
        environment["PYTHONPATH"] = clientScripts
        let result = try runProcess(
            "/usr/bin/python3", [clientScripts + "/session_edges.py"], environment: environment, timeout: 120)
        let cannotFind = "org.qtproject.QtDBus.Error.InvalidObjectPath (\"Can't find session"
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(result.stdoutText) \(result.stderr)")
        #expect(
            lines.first == "127 bytes: org.freedesktop.DBus.Error.InvalidArgs ('Client public key size is invalid',)")
        #expect(lines.dropFirst().first == "128 bytes, leading zero: ok")
        #expect(lines.dropFirst(2).first?.hasPrefix("begins with 0xFF: " + cannotFind) == true)
        #expect(lines.dropFirst(3).first?.hasPrefix("shared value begins with zero: " + cannotFind) == true)
    }

    @Test func doctorNamesKWallet() throws {
        let doctor = try cli(["doctor"])
        #expect(doctor.status == 0, "\(doctor.stdoutText)")
        #expect(doctor.stdoutText.contains("is owned by kwalletd5 (pid "))
        #expect(doctor.stdoutText.contains("KWallet"))
        #expect(doctor.stdoutText.contains("default keyring: /org/freedesktop/secrets/collection/kdewallet"))
        #expect(doctor.stdoutText.contains("✓ store, read and delete a probe item: ok"))
    }

    @Test func watchSeesAnotherProgramsWrites() throws {
        let s = uniqueService("kw")
        let watch = try WatchProcess(global: ["-s", s], service: s)
        defer { _ = watch.stop() }
        #expect(
            try peer { try secretTool(["store", "--label=x", "service", s, "username", "w"], input: "1") }.status == 0)
        #expect(watch.waitForLine(containing: "created \(s) w") != nil, "\(watch.stderr)")
        #expect(try cli(["-s", s, "set", "w"], input: "2").status == 0)
        #expect(watch.waitForLine(containing: "changed \(s) w") != nil, "\(watch.stderr)")
        #expect(try cli(["-s", s, "delete", "w"]).status == 0)
        #expect(watch.waitForLine(containing: "deleted \(s) w") != nil, "\(watch.stderr)")
    }

    /// A peer's command, run again (twice at most) when it failed with a message: libsecret's and
    /// SecretStorage's own sessions fail on kwalletd5 about once in 100 (theirs, not ours). A
    /// plain miss (exit 1, nothing said) is not run again.
    private func peer(_ run: () throws -> ProcessResult) throws -> ProcessResult {
        var result = try run()
        // Not only with a message: python keyring's `get` failed so with no word on stderr, status 1,
        // once in 60 rounds (the item read back right by it and by us right after).
        for _ in 0..<2 where result.status != 0 {
            print("a peer failed on kwalletd5, run again: \(result.stderr)")
            result = try run()
        }
        return result
    }
}
