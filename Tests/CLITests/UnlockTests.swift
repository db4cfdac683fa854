import Foundation
import TestSupport
import Testing

/// `unlock`, `lock` and the holder, each test with a vault and an $XDG_RUNTIME_DIR (so a holder)
/// of its own: later commands without a passphrase go through the holder, which forgets the key
/// on `lock`, at its limits and when the vault is re-keyed, and answers its own uid only.
@Suite("unlock and lock: the holder")
struct UnlockTests {
    typealias Place = UnlockPlace

    @Test func aHundredGetsAfterOneUnlockAskNothing() throws {
        let place = try Place()
        defer { place.finish() }
        let refused = try place.run(["get", "token"])
        #expect(refused.status == 77, "no passphrase and no holder yet: \(refused.stderr)")
        #expect(refused.stderr.contains("keychain-cli unlock"))
        let unlocked = try place.run(["--passphrase-file", place.passphraseFile, "unlock"])
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(unlocked.stderr.contains("is unlocked for 8h"), "\(unlocked.stderr)")
        var answers = 0
        for _ in 0..<100 where try place.run(["get", "token"]).stdoutText == place.secret { answers += 1 }
        #expect(answers == 100)
        // The holder has its own session, none of keychain-cli's secrets, and our uid.
        let holders = place.holders()
        #expect(holders.count == 1)
        if let pid = holders.first {
            let environment = try #require(FileManager.default.contents(atPath: "/proc/\(pid)/environ"))
            #expect(environment.range(of: Data(CLIBackend.passphrase.utf8)) == nil)
            #expect(getsid(pid) == pid)
        }
        let locked = try place.run(["lock"])
        #expect(locked.status == 0 && locked.stderr.contains("1 vault is locked"), "\(locked.stderr)")
        #expect(try place.run(["get", "token"]).status == 77)
        let again = try place.run(["--vault", place.vault, "lock"])
        #expect(again.status == 0 && again.stderr.contains("was not unlocked"), "\(again.stderr)")
    }

    @Test func theTimeAndIdleLimitsLockIt() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock", "--ttl", "2s"], passphrase: true).status == 0)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        // (The sleeps here are the limits under test: 2 s of --ttl and of --idle passing.)
        usleep(2_300_000)
        #expect(try place.run(["get", "token"]).status == 77, "past --ttl")
        #expect(try place.run(["unlock", "--ttl", "none", "--idle", "2s"], passphrase: true).status == 0)
        for _ in 0..<3 {
            usleep(1_000_000)
            #expect(try place.run(["get", "token"]).status == 0, "used within --idle")
        }
        usleep(2_300_000)
        #expect(try place.run(["get", "token"]).status == 77, "unused for longer than --idle")
        let bad = try place.run(["unlock", "--ttl", "5x"], passphrase: true)
        #expect(bad.status == 64 && bad.stderr.contains("--ttl must be"), "\(bad.stderr)")
        let missing = try Place()
        defer { missing.finish() }
        try FileManager.default.removeItem(atPath: missing.vault)
        let none = try missing.run(["unlock"], passphrase: true)
        #expect(none.status == 1 && none.stderr.contains("no vault"), "\(none.stderr)")
    }

    /// Writes through the holder land in the file as direct writes do; a direct write is seen
    /// through it; a re-key ends it, and it never writes with the old key over the new file.
    @Test func writesAndReKeyingAreSeenBothWays() throws {
        let place = try Place()
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        #expect(try place.run(["set", "held"], stdin: Data("through".utf8)).status == 0)
        #expect(try place.run(["get", "held"], passphrase: true).stdoutText == "through")
        #expect(try place.run(["set", "held"], passphrase: true, stdin: Data("direct".utf8)).status == 0)
        #expect(try place.run(["get", "held"]).stdoutText == "direct", "a direct write is seen")
        #expect(try place.run(["list"]).stdoutText.split(separator: "\n").sorted() == ["held", "token"])
        // The git helper never asks; through the holder it stores and reads.
        let stored = try place.run(
            ["git-credential", "store"], stdin: Data("protocol=https\nhost=h.example\nusername=u\npassword=p1\n\n".utf8)
        )
        #expect(stored.status == 0, "\(stored.stderr)")
        let read = try place.run(["git-credential", "get"], stdin: Data("protocol=https\nhost=h.example\n\n".utf8))
        #expect(read.stdoutText.contains("password=p1"), "\(read.stderr)")
        let docker = #"{"ServerURL":"registry.example","Username":"u","Secret":"d1"}"#
        #expect(try place.run(["docker-credential", "store"], stdin: Data(docker.utf8)).status == 0)
        let login = try place.run(["docker-credential", "get"], stdin: Data("registry.example\n".utf8))
        #expect(login.stdoutText.contains(#""Secret":"d1""#), "\(login.stdoutText)")
        // vault passwd while unlocked: the holder's key opens the vault no more.
        try Data("new passphrase".utf8).write(to: URL(fileURLWithPath: place.scratch.path("new")))
        let rekeyed = try place.run(
            ["vault", "passwd", "--new-passphrase-file", place.scratch.path("new")], passphrase: true)
        #expect(rekeyed.status == 0, "\(rekeyed.stderr)")
        // vault passwd told the holder, which held nothing more and ended.
        #expect(eventually(timeout: 2) { place.holders().isEmpty })
        #expect(try place.run(["set", "held"], stdin: Data("old-key".utf8)).status == 77)
        #expect(try place.run(["get", "held"]).status == 77)
        let reread = try place.run(["--passphrase-file", place.scratch.path("new"), "get", "held"])
        #expect(reread.stdoutText == "direct", "\(reread.stderr)")
    }

    /// Four unlocks at once start one holder; a holder killed by SIGKILL leaves a socket nobody
    /// listens on, which commands pass by and the next unlock replaces.
    @Test func racingUnlocksAndAKilledHolder() throws {
        let place = try Place()
        defer { place.finish() }
        let results = try (0..<4).map { _ in
            try startCLI(
                ["unlock"],
                environment: [
                    "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
                    "XDG_RUNTIME_DIR": place.runtime, "KEYCHAIN_PASSPHRASE": CLIBackend.passphrase,
                ])
        }.map { $0.exitStatus() }
        #expect(results.allSatisfy { $0 == 0 }, "\(results)")
        #expect(place.holders().count == 1)
        place.killHolders()
        #expect(place.holders().isEmpty)
        #expect(FileManager.default.fileExists(atPath: place.runtime + "/keychain-cli/holder.sock"))
        let passedBy = try place.run(["get", "token"])
        #expect(passedBy.status == 77, "\(passedBy.stderr)")
        #expect(try place.run(["get", "token"], passphrase: true).stdoutText == place.secret)
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        // lock while a large write goes through the holder: the vault is whole either way.
        let lines = (0..<3000).map { "K\($0)=value-\($0)" }.joined(separator: "\n") + "\n"
        let writer = try startCLI(
            ["import", "--format", "env"],
            environment: [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
                "XDG_RUNTIME_DIR": place.runtime,
            ], stdin: Data(lines.utf8))
        #expect(try place.run(["lock", "--all"]).status == 0)
        _ = writer.exitStatus()
        let listed = try place.run(["list"], passphrase: true)
        #expect(listed.status == 0, "\(listed.stderr)")
        let count = listed.stdoutText.split(separator: "\n").count
        #expect(count == 1 || count == 3001, "all or none: \(count)")
    }

    /// logind's PrepareForSleep(true), on a bus of the test's own standing in for the system bus:
    /// the holder forgets its vaults. The same signal from a sender that is not logind's name
    /// does nothing.
    @Test func aSuspendLocksIt() throws {
        let place = try Place()
        defer { place.finish() }
        // Not --fork: a bus of our own child's, that only we reap, so its pid is its own when
        // it is ended.
        let printed = place.scratch.path("bus.address")
        let bus = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--print-address=1"],
            environment: ["PATH": "/usr/bin:/bin"],
            files: [(0, "/dev/null", O_RDONLY), (1, printed, O_WRONLY | O_CREAT | O_TRUNC), (2, "/dev/null", O_WRONLY)])
        defer { bus.stop() }
        var address = ""
        #expect(
            eventually(timeout: 30) {
                address = (try? String(contentsOfFile: printed, encoding: .utf8)) ?? ""
                return address.hasSuffix("\n")
            })
        address = address.trimmingCharacters(in: .newlines)
        let emit = """
            import sys
            from jeepney import DBusAddress, new_signal
            from jeepney.bus_messages import message_bus
            from jeepney.io.blocking import open_dbus_connection
            connection = open_dbus_connection(bus=sys.argv[1])
            if sys.argv[2] == "logind":
                connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.login1"))
            manager = DBusAddress("/org/freedesktop/login1", interface="org.freedesktop.login1.Manager")
            connection.send(new_signal(manager, "PrepareForSleep", "b", (True,)))
            connection.send_and_get_reply(message_bus.GetId())
            """
        var extra = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": place.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            "XDG_RUNTIME_DIR": place.runtime, "DBUS_SYSTEM_BUS_ADDRESS": address,
        ]
        extra["KEYCHAIN_PASSPHRASE"] = CLIBackend.passphrase
        #expect(try cli(["unlock"], session: nil, extra: extra).status == 0)
        for sender in ["impostor", "logind"] {
            let sent = try runProcess(
                "/usr/bin/python3", ["-c", emit, address, sender], environment: ["PATH": "/usr/bin:/bin"])
            #expect(sent.status == 0, "\(sent.stderr)")
            // The holder handles the signal on a thread of its own: asked again for up to 3 s (for
            // the impostor, the time it is given to do wrong: an absence, no event).
            var status: Int32 = 0
            try eventually(timeout: 3, interval: 0.3) {
                status = try place.run(["get", "token"]).status
                return status != 0
            }
            #expect(status == (sender == "logind" ? 77 : 0), "after \(sender)'s signal")
            if sender == "impostor" { #expect(place.holders().count == 1) }
        }
        #expect(eventually(timeout: 2) { place.holders().isEmpty }, "a holder that holds nothing ends")
    }

    /// keychain-cli started with `environment` (and PATH) without waiting; stdin from `stdin`.
    func startCLI(_ arguments: [String], environment: [String: String], stdin: Data = Data()) throws
        -> ChildProcess
    {
        let input = Pipe()
        let process = try ChildProcess(
            keychainCLIPath, arguments, environment: environment.merging(["PATH": "/usr/bin:/bin"]) { old, _ in old },
            files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)],
            descriptors: [(0, input.fileHandleForReading.fileDescriptor)])
        try input.fileHandleForReading.close()
        try input.fileHandleForWriting.write(contentsOf: stdin)
        try input.fileHandleForWriting.close()
        return process
    }
}

extension ChildProcess {
    /// Waits for the process and gives its exit status.
    func exitStatus() -> Int32 {
        waitUntilExit()
        return terminationStatus
    }
}
