import Foundation
import TestSupport
import Testing

/// Issue 10 on the Secret Service: items other tools wrote (other attributes, odd names, two
/// items under one name), and items that vanish or a daemon that dies while we work.
@Suite("Other tools' items and vanishing ones", .keyringSession)
struct ForeignItemTests {
    // 1. reset removes exactly what list shows, and its prompt counts just those.
    @Test func resetRemovesOnlyWhatListShows() throws {
        let s = uniqueService()
        // node keytar's attributes: service and account, no username.
        #expect(try secretTool(["store", "--label=keytar", "service", s, "account", "alice"], input: "kt").status == 0)
        #expect(try cli(["-s", s, "set", "ours"], input: "v").status == 0)
        #expect(try cli(["-s", s, "list"]).stdoutText == "ours\n")
        let prompted = try expect(
            """
            spawn $env(KEYCHAIN_CLI) -s \(s) reset
            expect "Delete all 1 secret(s) of service"
            send "y\\r"
            expect eof
            """)
        #expect(prompted.stdoutText.contains("removed 1 secret of service"), "\(prompted.stdoutText)")
        #expect(try secretTool(["lookup", "service", s, "account", "alice"]).stdoutText == "kt")
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText == "removed 0 secrets of service '\(s)'\n")
        #expect(try secretTool(["lookup", "service", s, "account", "alice"]).stdoutText == "kt")
    }

    // 3. Two tools' items under one service and key: export → reset → import round-trips.
    @Test func twoItemsUnderOneNameExportAsOneAndRestore() throws {
        let s = uniqueService()
        for tool in ["one", "two"] {
            let stored = try secretTool(
                ["store", "--label=\(tool)", "service", s, "username", "k", "tool", tool], input: "shared")
            #expect(stored.status == 0)
        }
        #expect(try cli(["-s", s, "list"]).stdoutText == "k\nk\n")
        let backup = try cli(["-s", s, "export", "--yes"])
        #expect(backup.status == 0)
        let items = try JSONSerialization.jsonObject(with: backup.stdout) as! [String: Any]
        #expect((items["items"] as? [Any])?.count == 1)
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText == "removed 2 secrets of service '\(s)'\n")
        let restored = try cli(["import"], stdin: backup.stdout)
        #expect(restored.stdoutText == "added 1, replaced 0, skipped 0\n", "\(restored.stderr)")
        #expect(try cli(["-s", s, "get", "k"]).stdoutText == "shared")
    }

    // 4 and 10. A foreign item named with a control character, or a long name, is listed
    // (escaped), exported and imported like any other.
    @Test func foreignItemsWithOddNamesAreBackedUpAndRestored() throws {
        let s = uniqueService()
        let odd = "tab\there\u{1b}[2J"
        let long = String(repeating: "ł", count: 1500)  // 3,000 bytes
        #expect(try secretTool(["store", "--label=x", "service", s, "username", odd], input: "o").status == 0)
        #expect(try secretTool(["store", "--label=y", "service", s, "username", long], input: "l").status == 0)
        #expect(try cli(["-s", s, "list"]).stdoutText == "tab\\there\\u{001B}[2J\n\(long)\n")
        for arguments in [["-s", s, "export", "--yes"], ["export", "--all-services", "--yes"]] {
            let exported = try cli(arguments)
            #expect(exported.status == 0, "\(arguments): \(exported.stderr)")
        }
        let backup = try cli(["-s", s, "export", "--yes"])
        #expect(try cli(["-s", s, "reset", "--yes"]).stdoutText == "removed 2 secrets of service '\(s)'\n")
        #expect(try cli(["import"], stdin: backup.stdout).stdoutText == "added 2, replaced 0, skipped 0\n")
        #expect(try secretTool(["lookup", "service", s, "username", odd]).stdoutText == "o")
        #expect(try cli(["-s", s, "get", long]).stdoutText == "l")
    }

    // 6. An item another process deletes while we work is "not found" or "already deleted",
    // never "no default keyring" (69): the item paths a search returned may be gone by the next call.
    @Test func itemsDeletedByAConcurrentProcessAreMissingNotAnUnavailableKeyring() throws {
        let s = uniqueService()
        var statuses: [String: Swift.Set<Int32>] = [:]
        for _ in 0..<25 {
            _ = try cli(["-s", s, "set", "k"], input: "v")
            let script = """
                for c in "get k" "delete k" "list" "reset --yes" "delete k --ignore-missing" "export --yes"; do
                  ( $KC -s \(s) $c >/dev/null 2>&1; echo "$c=$?" ) &
                done
                ( $KC -s \(s) set k <<< w >/dev/null 2>&1; echo "set=$?" ) &
                wait
                """
            let result = try runProcess(
                "/bin/bash", ["-c", script],
                environment: KeyringSession.current!.environment.merging(["KC": keychainCLIPath]) { $1 })
            for line in result.stdoutText.split(separator: "\n") {
                let parts = line.split(separator: "=")
                statuses[String(parts[0]), default: []].insert(Int32(parts.last!)!)
            }
        }
        for (command, codes) in statuses {
            let allowed: Swift.Set<Int32> = command.hasPrefix("get") || command == "delete k" ? [0, 1] : [0]
            #expect(codes.isSubset(of: allowed), "\(command): \(codes)")
        }
    }
}

@Suite("A keyring daemon that dies")
struct DyingDaemonTests {
    // 6. A daemon that dies while a call is pending is a backend that went away (69, with the
    // reason), not a time-out or a missing keyring.
    @Test func aDaemonKilledMidCallIsUnavailableNotATimeout() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        #expect(try cli(["set", "k"], input: "v", session: session).status == 0)
        session.freezeDaemon()
        var environment = session.environment
        environment["KC"] = keychainCLIPath
        let result = try runProcess(
            "/bin/bash", ["-c", "$KC --timeout 20 list & sleep 1; kill -KILL $DAEMON; wait $!; echo rc=$?"],
            environment: environment.merging(["DAEMON": String(session.daemonProcessIdentifier ?? 0)]) { $1 })
        #expect(result.stdoutText == "rc=69\n", "\(result.stderr)")
        #expect(result.stderr.contains("the Secret Service quit before it answered"), "\(result.stderr)")
        // What a suite whose daemon died is told: how it ended (once the kernel has made it a
        // zombie: under load that may come after keychain-cli saw its socket close).
        #expect(eventually { session.diagnosis() != nil })
        let diagnosis = session.diagnosis() ?? ""
        #expect(diagnosis.hasPrefix("gnome-keyring-daemon was killed by signal 9"), "\(diagnosis)")
    }
}
