import Foundation
import TestSupport
import Testing

/// `keychain-cli serve` itself: its exit statuses, the bus name, the encrypted transfer, and
/// what it keeps through SIGKILL, concurrent clients and other writers of the same backend.
@Suite("serve: lifecycle, durability and the encrypted session")
struct ServeTests {
    @Test func exitsWithTheCommandsStatusAndRefusesWhatCannotServe() throws {
        try CLIBackend.withVault { _ in
            #expect(try served("exit 7").status == 7)
            #expect(try served("kill -KILL $$").status == 137)
            let missing = try cli(["serve", "--", "no-such-command-here"], session: nil)
            #expect(missing.status == 127 && missing.stderr.contains("cannot find the command"), "\(missing.stderr)")
            let onItself = try cli(["--backend", "secret-service", "serve", "--", "true"], session: nil)
            #expect(onItself.status == 64 && onItself.stderr.contains("--backend vault"), "\(onItself.stderr)")
            let noBus = try cli(["serve"], session: nil)
            #expect(noBus.status == 69 && noBus.stderr.contains("DBUS_SESSION_BUS_ADDRESS"), "\(noBus.stderr)")
            // A wrong passphrase fails before anything runs.
            #expect(try cli(["-s", "s", "set", "k"], input: "v").status == 0)
            let wrong = try served("echo ran", extra: ["KEYCHAIN_PASSPHRASE": "wrong"])
            #expect(wrong.status == 77 && wrong.stdoutText.isEmpty)
        }
    }

    /// Another serve on the same bus exits 69 at once naming the owner (before asking for a
    /// passphrase); `--replace` takes the name, and the one that lost it exits 69 too; a
    /// foreground serve stops on SIGTERM with 0.
    @Test func theNameIsOwnedOnceAndReplaceTakesIt() throws {
        try CLIBackend.withVault { _ in
            let second = try served("keychain-cli serve; echo \"second: $?\"")
            #expect(second.stdoutText == "second: 69\n")
            #expect(second.stderr.contains("org.freedesktop.secrets is already owned by keychain-cli (pid"))
            let result = try runProcess(
                "/usr/bin/dbus-run-session",
                [
                    "--", "sh", "-c",
                    """
                    cd "$(mktemp -d)" || exit 99
                    keychain-cli serve 2>first.log & first=$!
                    # Until the first serve owns the name (gdbus waits for NameOwnerChanged).
                    gdbus wait --session --timeout 30 org.freedesktop.secrets || exit 98
                    keychain-cli serve --replace & second=$!
                    wait $first; echo "first: $?"
                    printf v | secret-tool store --label=l service r username u && secret-tool lookup service r username u
                    echo; kill -TERM $second; wait $second; echo "second: $?"; cat first.log
                    """,
                ],
                environment: cliEnvironment(session: nil).merging([
                    "PATH": URL(fileURLWithPath: keychainCLIPath).deletingLastPathComponent().path + ":/usr/bin:/bin"
                ]) { $1 })
            #expect(result.stdoutText.hasPrefix("first: 69\nv\nsecond: 0\n"), "\(result.stdoutText) \(result.stderr)")
            #expect(result.stdoutText.contains("was taken over by keychain-cli (pid"))
            #expect(try cli(["-s", "r", "get", "u"]).stdoutText == "v")
        }
    }

    /// With an encrypted session (libsecret always asks for one), a secret never crosses the bus
    /// in the clear: dbus-monitor sees every message of the private bus.
    @Test(arguments: ["secret-tool", "python"])
    func secretsCrossTheBusEncrypted(client: String) throws {
        try CLIBackend.withVault { _ in
            let store =
                client == "secret-tool"
                ? "printf 'Plain-Text-Canary' | secret-tool store --label=c service canary username u"
                    + " && secret-tool lookup service canary username u"
                : "python3 -c 'import keyring; keyring.set_password(\"canary\", \"u\", \"Plain-Text-Canary\");"
                    + " print(keyring.get_password(\"canary\", \"u\"), end=\"\")'"
            let result = try served(
                """
                monitor
                \(store); echo
                # A last call the monitor sees once it has seen every message before it.
                dbus-send --session --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                    org.freedesktop.DBus.NameHasOwner string:end-of-monitoring
                upto end-of-monitoring; kill $monitor
                grep -c 'dh-ietf1024-sha256-aes128-cbc-pkcs7' monitor.log; grep -c Plain-Text-Canary monitor.log
                """)
            let lines = result.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.first?.hasPrefix("Plain-Text-Canary") == true, "\(result.stdoutText) \(result.stderr)")
            #expect(Int(lines.dropFirst().first ?? "") ?? 0 >= 1, "no encrypted session was opened")
            #expect(lines.dropFirst(2).first == "0", "the secret crossed the bus in the clear")
            #expect(try cli(["-s", "canary", "get", "u"]).stdoutText == "Plain-Text-Canary")
        }
    }

    /// The session's edges, as libsecret and kwalletd5's clients meet them (Tests/clients/
    /// session_edges.py): a public value in 127 bytes or padded to 128, one that begins with 0xFF,
    /// and a shared value that begins with a zero byte, hashed whole as libsecret hashes it.
    @Test func theEncryptedSessionsEdgesWorkAsWithLibsecret() throws {
        try CLIBackend.withVault { _ in
            let result = try served("python3 \"$PYTHONPATH/session_edges.py\"", timeout: 120)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdoutText == """
                    127 bytes: ok
                    128 bytes, leading zero: ok
                    begins with 0xFF: ok
                    shared value begins with zero: ok

                    """, "\(result.stderr)")
            #expect(
                try cli(["-s", "edges", "get", "shared value begins with zero"]).stdoutText
                    == "secret of shared value begins with zero")
        }
    }

    /// Every write a client saw acknowledged is in the backend when serve is SIGKILLed right after.
    @Test(arguments: ServedBackend.allCases)
    func sigkillLosesNoAcknowledgedItem(backend: ServedBackend) throws {
        try backend.run { _ in
            let result = try served(
                """
                for i in $(seq 1 20); do printf "v$i" | secret-tool store --label=l service k username "u$i" || exit 9; done
                kill -9 $PPID
                """)
            #expect(result.signaled && result.status == 9)
            let keys = try cli(["-s", "k", "list"]).stdoutText.split(separator: "\n")
            #expect(keys.count == 20)
            #expect(try cli(["-s", "k", "get", "u20"]).stdoutText == "v20")
        }
    }

    /// Four clients writing at once, and another process writing the backend directly meanwhile:
    /// nothing is lost, and serve's clients see the other process's item.
    @Test(arguments: ServedBackend.allCases)
    func concurrentClientsAndOtherWritersLoseNothing(backend: ServedBackend) throws {
        try backend.run { _ in
            let result = try served(
                """
                for c in 1 2 3 4; do
                    (for i in $(seq 1 10); do printf x | secret-tool store --label=l service busy username "c$c-$i" || exit 9; done) &
                done
                # serve passes no passphrase or token on: the command gives its own.
                KEYCHAIN_PASSPHRASE="$PW" BAO_TOKEN="$TOKEN" keychain-cli -s outside set direct <<EOF || exit 8
                from-outside
                EOF
                # Another serve of the same backend, on a private bus of its own.
                KEYCHAIN_PASSPHRASE="$PW" BAO_TOKEN="$TOKEN" keychain-cli serve -- \
                    sh -c 'printf y | secret-tool store --label=l service other username second' || exit 7
                wait
                # (Seen by serve's watcher, on its own time: no event tells which item it is.)
                eventually secret-tool lookup service outside username direct > found; cat found; echo
                """, extra: ["PW": CLIBackend.passphrase, "TOKEN": (CLIBackend.overrides["BAO_TOKEN"] ?? nil) ?? ""])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "from-outside\n")
            #expect(try cli(["-s", "busy", "list"]).stdoutText.split(separator: "\n").count == 40)
            #expect(try cli(["-s", "outside", "get", "direct"]).stdoutText == "from-outside")
            #expect(try cli(["-s", "other", "get", "second"]).stdoutText == "y")
        }
    }

    /// The team vault stays an age file its members open with age itself: a version 2 document
    /// with the items' attributes, labels and content types; a vault only keychain-cli's own
    /// commands wrote stays version 1, which earlier versions read.
    @Test func aTeamVaultStaysAnAgeFileWithTheDetailsInside() throws {
        try ServedBackend.teamVault.run { storage in
            #expect(try cli(["-s", "s", "set", "plain"], input: "v").status == 0)
            let before = try runProcess(
                "/usr/bin/age", ["-d", "-i", storage.identity!, storage.vault!], environment: ["PATH": "/usr/bin:/bin"])
            #expect(before.stdoutText.contains("\"version\" : 1"))
            #expect(
                try served("printf s | secret-tool store --label='A label' service s username u kind k").status == 0)
            let after = try runProcess(
                "/usr/bin/age", ["-d", "-i", storage.identity!, storage.vault!], environment: ["PATH": "/usr/bin:/bin"])
            #expect(after.status == 0)
            let document = try JSONSerialization.jsonObject(with: after.stdout) as? [String: Any]
            #expect(document?["version"] as? Int == 2)
            let items = document?["items"] as? [[String: Any]] ?? []
            let item = items.first { $0["key"] as? String == "u" }
            #expect(item?["label"] as? String == "A label" && item?["contentType"] as? String == "text/plain")
            #expect((item?["attributes"] as? [String: String])?["kind"] == "k")
        }
    }

    /// keychain-cli's watch, through serve, sees what a client of serve writes.
    @Test func watchThroughServeSeesAClientsWrites() throws {
        try CLIBackend.withVault { _ in
            let result = try served(
                """
                # watch subscribes, then lists the items (SearchItems): from then on it sees changes.
                monitor type=method_call,member=SearchItems
                mkfifo watch.fifo
                KEYCHAIN_BACKEND=secret-service keychain-cli -s w watch > watch.fifo 2>&1 & watcher=$!
                exec 5< watch.fifo
                upto member=SearchItems
                printf a | secret-tool store --label=l service w username k
                IFS= read -r line <&5; echo "$line"
                kill $watcher; wait $watcher
                """)
            #expect(result.stdoutText.contains("created w k"), "\(result.stdoutText) \(result.stderr)")
        }
    }

    /// libsecret reads the properties of every item a search found at once: a search of 600
    /// items (more calls in flight than dbus-daemon allows by default) answers every one.
    @Test func aSearchOfManyItemsAnswersEveryOne() throws {
        try CLIBackend.withVault { _ in
            let items = (0..<600).map { #"{"service":"many","key":"k\#($0)","encoding":"utf8","secret":"v\#($0)"}"# }
            let document =
                #"{"format":"keychain-cli-export","version":1,"items":["# + items.joined(separator: ",") + "]}"
            #expect(try cli(["import"], input: document).status == 0)
            let result = try served("secret-tool search --all service many | grep -c '^secret = v'")
            #expect(result.stdoutText == "600\n", "\(result.stderr)")
        }
    }
}
