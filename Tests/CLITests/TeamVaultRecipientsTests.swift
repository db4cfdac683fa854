import Foundation
import TestSupport
import Testing

private func run(_ executable: String, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    try runProcess(executable, arguments, stdin: stdin, environment: ["PATH": "/usr/bin:/bin"])
}

/// A team of three: alice (keychain-cli's keygen), bob (age-keygen), carol (an ssh-ed25519 key
/// from ssh-keygen), with the vault `team.age` in a scratch directory.
private struct Team {
    let directory: ScratchDirectory
    let vault: String
    var identity: [String: String] = [:]
    var recipient: [String: String] = [:]

    init() throws {
        directory = try ScratchDirectory("team")
        vault = directory.path("team.age")
        let alice = directory.path("alice.txt")
        recipient["alice"] = try TestSupport.cli(["vault", "keygen", "-o", alice], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        let bob = directory.path("bob.txt")
        #expect(try run("/usr/bin/age-keygen", ["-o", bob]).status == 0)
        recipient["bob"] = try run("/usr/bin/age-keygen", ["-y", bob]).stdoutText.trimmingCharacters(in: .newlines)
        let carol = directory.path("carol")
        #expect(
            try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "carol@ci", "-f", carol]).status == 0
        )
        recipient["carol"] = carol + ".pub"  // a file of recipients, as ~/.ssh/id_ed25519.pub is
        identity = ["alice": alice, "bob": bob, "carol": carol]
    }

    /// keychain-cli on the team vault as `member` (no identity: nil).
    func cli(_ member: String?, _ arguments: [String], stdin: Data? = nil, passphrase: String? = nil) throws
        -> ProcessResult
    {
        var environment = ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault]
        environment["KEYCHAIN_IDENTITY"] = member.flatMap { identity[$0] }
        environment["KEYCHAIN_PASSPHRASE"] = passphrase
        return try TestSupport.cli(arguments, stdin: stdin, session: nil, extra: environment)
    }

    func get(_ member: String, _ key: String) throws -> ProcessResult { try cli(member, ["-s", "ci", "get", key]) }
}

@Suite("Team vaults: recipients, re-keying, ssh-ed25519, passwd, doctor")
struct TeamVaultRecipientsTests {
    /// The issue's scenario: three identities, one removed and the vault re-keyed; the removed
    /// one cannot open new versions (with keychain-cli or age), the others still can, and writes
    /// keep the remaining recipients.
    @Test func threeMembersOneRemovedCannotOpenNewVersions() throws {
        let team = try Team()
        defer { team.directory.remove() }
        let added = try team.cli(
            nil,
            ["vault", "recipients", "add", team.recipient["alice"]!, team.recipient["bob"]!, team.recipient["carol"]!])
        #expect(added.status == 0 && added.stderr.contains("3 added, 0 removed"), "\(added.stderr)")
        #expect(try team.cli("alice", ["-s", "ci", "set", "github-token"], stdin: Data("ghp_1".utf8)).status == 0)
        for member in ["alice", "bob", "carol"] {
            #expect(try team.get(member, "github-token").stdoutText == "ghp_1", "\(member)")
        }
        // As docs/backends/vault.md writes it: --vault and --identity choose the vault backend themselves.
        let asWritten = try cli(
            ["--vault", team.vault, "--identity", team.identity["carol"]!, "-s", "ci", "get", "github-token"],
            session: nil)
        #expect(asWritten.stdoutText == "ghp_1", "\(asWritten.stderr)")
        let listed = try team.cli("bob", ["vault", "recipients", "list"]).stdoutText.split(separator: "\n")
        let carolKey = try String(contentsOfFile: team.recipient["carol"]!, encoding: .utf8)
            .trimmingCharacters(in: .newlines)
        #expect(listed == [team.recipient["alice"]!, team.recipient["bob"]!, carolKey].map { Substring($0) })
        // age reads our vault with each identity, ssh's included.
        for member in ["bob", "carol"] {
            let opened = try run("/usr/bin/age", ["-d", "-i", team.identity[member]!, team.vault])
            #expect(opened.status == 0 && opened.stdoutText.contains("ghp_1"), "\(member): \(opened.stderr)")
        }
        let oldCopy = team.directory.path("old.age")
        try FileManager.default.copyItem(atPath: team.vault, toPath: oldCopy)

        let removed = try team.cli("carol", ["vault", "recipients", "remove", team.recipient["bob"]!])
        #expect(removed.status == 0 && removed.stderr.contains("0 added, 1 removed"), "\(removed.stderr)")
        let refused = try team.get("bob", "github-token")
        #expect(refused.status == 77 && refused.stderr.contains("none of the identities"), "\(refused.stderr)")
        #expect(try run("/usr/bin/age", ["-d", "-i", team.identity["bob"]!, team.vault]).status != 0)
        // Re-keyed: a new file key, so the old header (which bob can open) no longer applies.
        let header = { (path: String) in
            try String(decoding: Data(contentsOf: URL(fileURLWithPath: path)).prefix(200), as: UTF8.self)
        }
        #expect(try header(oldCopy) != header(team.vault))
        #expect(try run("/usr/bin/age", ["-d", "-i", team.identity["bob"]!, oldCopy]).status == 0)
        // Writes by the rest keep exactly the rest.
        #expect(try team.cli("carol", ["-s", "ci", "set", "npm-token"], stdin: Data("npm_2".utf8)).status == 0)
        #expect(try team.get("alice", "npm-token").stdoutText == "npm_2")
        #expect(try team.get("bob", "npm-token").status == 77)
        #expect(try team.cli("alice", ["vault", "recipients"]).stdoutText.split(separator: "\n").count == 2)
        let doctor = try team.cli("alice", ["doctor"])
        #expect(
            doctor.status == 0
                && doctor.stdoutText.contains("✓ vault lock: age recipients; \(team.recipient["alice"]!)"))
        let strangerDoctor = try team.cli("bob", ["doctor"])
        #expect(strangerDoctor.status == 77 && strangerDoctor.stdoutText.contains("✗ vault lock: "))
    }

    /// ssh-ed25519 both ways with the real age: `age -R key.pub` opens with --identity KEY, and
    /// the key's fingerprint tag tells keys apart (another ssh key is "no identity matches").
    @Test func sshEd25519RecipientsInteroperateWithAge() throws {
        let team = try Team()
        defer { team.directory.remove() }
        let document = team.directory.path("document.json")
        try Data(
            #"{"format":"keychain-cli-vault","version":1,"items":[{"service":"ci","key":"k","encoding":"utf8","secret":"from-age"}]}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: document))
        let encrypted = try run("/usr/bin/age", ["-R", team.recipient["carol"]!, "-o", team.vault, document])
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        #expect(try team.get("carol", "k").stdoutText == "from-age")
        let other = team.directory.path("other")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]).status == 0)
        var environment = ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": team.vault, "KEYCHAIN_IDENTITY": other]
        #expect(try cli(["-s", "ci", "get", "k"], session: nil, extra: environment).status == 77)
        // A passphrase-protected ssh key the vault is not encrypted to: no passphrase is needed to
        // say so (EncryptedIdentityTests opens vaults with such keys).
        let locked = team.directory.path("locked")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "secret", "-f", locked]).status == 0)
        environment["KEYCHAIN_IDENTITY"] = locked
        let refused = try cli(["-s", "ci", "get", "k"], session: nil, extra: environment)
        #expect(refused.status == 77 && refused.stderr.contains("none of the identities"), "\(refused.stderr)")
        // The list is empty (age wrote the document): list says so, and adding re-keys with a list.
        let list = try team.cli("carol", ["vault", "recipients", "list"])
        #expect(list.status == 0 && list.stdoutText.isEmpty && list.stderr.contains("does not list"))
        let relisted = try team.cli("carol", ["vault", "recipients", "add", team.recipient["carol"]!])
        #expect(relisted.status == 0 && relisted.stderr.contains("listed none of its 1 earlier recipients"))
        #expect(try team.cli("carol", ["vault", "recipients", "list"]).stdoutText.hasPrefix("ssh-ed25519 AAAA"))
    }

    @Test func badRecipientsAndRemovalsAreRefusedAndChangeNothing() throws {
        let team = try Team()
        defer { team.directory.remove() }
        #expect(try team.cli(nil, ["vault", "recipients", "add", team.recipient["alice"]!]).status == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: team.vault))
        let rsa = team.directory.path("rsa")
        #expect(try run("/usr/bin/ssh-keygen", ["-q", "-t", "rsa", "-b", "1024", "-N", "", "-f", rsa]).status == 0)
        // Another last character, so the bech32 checksum fails (never the same one: that was a valid key).
        let bob = team.recipient["bob"]!
        let broken = String(bob.dropLast()) + (bob.hasSuffix("q") ? "p" : "q")
        for (arguments, message) in [
            (["add", broken], "not a valid age recipient"),
            (["add", rsa + ".pub"], "not a valid ssh-rsa public key of 2048 bits or more"),
            (["add", "AGE-SECRET-KEY-1QQQ"], "that is an identity"),
            (["add", team.directory.path("missing.pub")], "cannot open"),
            (["remove", team.recipient["bob"]!], "is not one of the vault's recipients"),
            (["remove", team.recipient["alice"]!], "at least one recipient"),
        ] {
            let result = try team.cli("alice", ["vault", "recipients"] + arguments)
            #expect(result.status == 64 || result.status == 74, "\(arguments): \(result.status)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("AGE-SECRET-KEY-1QQQ"), "a secret key is never echoed")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: team.vault)) == before)
        let missing = try cli(
            ["vault", "recipients", "list"], session: nil,
            extra: ["KEYCHAIN_VAULT": team.directory.path("none.age"), "KEYCHAIN_PASSPHRASE": "x"])
        #expect(missing.status == 1 && missing.stderr.contains("there is no vault"))
    }

    /// `remove` checks that each one is a recipient under the vault's write lock, on the version it
    /// replaces: when another writer removes the same recipient while `remove` waits for the lock,
    /// nothing is rewritten and it exits 64 (it looked before taking the lock until 2026-11-24, and
    /// then re-keyed the vault, reporting "0 removed").
    @Test func removeChecksMembershipUnderTheWriteLock() throws {
        let team = try Team()
        defer { team.directory.remove() }
        let bob = team.recipient["bob"]!
        #expect(try team.cli(nil, ["vault", "recipients", "add", team.recipient["alice"]!, bob]).status == 0)
        let vault = URL(fileURLWithPath: team.vault)
        let withBob = try Data(contentsOf: vault)
        #expect(try team.cli("alice", ["vault", "recipients", "remove", bob]).status == 0)
        let withoutBob = try Data(contentsOf: vault)
        try withBob.write(to: vault)
        // Hold the lock as a writer does, while `remove` looks and then waits for it. On a thread
        // of its own: a blocked task of the cooperative pool could keep this one from releasing it.
        let fd = open(team.directory.url.path, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        #expect(flock(fd, LOCK_EX) == 0)
        let racing = RacingResult()
        Thread.detachNewThread {
            racing.result = Result { try team.cli("alice", ["--timeout", "30", "vault", "recipients", "remove", bob]) }
            racing.done.signal()
        }
        // Until it has looked and waits for the lock (it has the directory open then).
        #expect(eventually { !processesWithOpen(team.directory.url.path).isEmpty }, "remove never waited")
        // The other writer's version (bob removed), swapped in whole as a writer does, so that a
        // `remove` still looking never reads a half-written file.
        let swap = team.directory.path("swap.age")
        #expect(
            FileManager.default.createFile(atPath: swap, contents: withoutBob, attributes: [.posixPermissions: 0o600]))
        #expect(rename(swap, team.vault) == 0)
        #expect(flock(fd, LOCK_UN) == 0)
        #expect(racing.done.wait(timeout: .now() + 60) == .success)
        let result = try #require(racing.result).get()
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("is not one of the vault's recipients; nothing changed"), "\(result.stderr)")
        #expect(try Data(contentsOf: vault) == withoutBob)
    }

    /// Another member removes the identity a `watch` opened the team vault with: the watch ends
    /// with 77 saying the vault was re-keyed, not that no identity opens it.
    @Test func aWatcherWhoseIdentityIsRemovedEndsWith77() throws {
        let team = try Team()
        defer { team.directory.remove() }
        let bob = team.recipient["bob"]!
        #expect(try team.cli(nil, ["vault", "recipients", "add", team.recipient["alice"]!, bob]).status == 0)
        let asBob = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": team.vault, "KEYCHAIN_IDENTITY": team.identity["bob"]!,
        ]
        let watch = try WatchProcess(
            ["--interval", "0.2"], global: ["-s", "ci"], session: nil, extra: asBob, service: "ci")
        #expect(try team.cli("alice", ["vault", "recipients", "remove", bob]).status == 0)
        let result = try #require(watch.waitForExit(timeout: 20))
        #expect(result.status == 77, "\(result.stderr)")
        #expect(result.stderr.contains("was re-keyed by another process since this one opened it"), "\(result.stderr)")
    }

    /// passwd re-keys a passphrase vault; adding recipients turns it into a team vault, and passwd
    /// turns that back; the identity file's mode is checked by doctor.
    @Test func passwdAndTheTwoWaysBetweenPassphraseAndRecipients() throws {
        let team = try Team()
        defer { team.directory.remove() }
        func onVault(_ passphrase: String?, _ arguments: [String], new: String? = nil, member: String? = nil) throws
            -> ProcessResult
        {
            var environment = ["KEYCHAIN_VAULT": team.vault, "KEYCHAIN_VAULT_WORK_FACTOR": "10"]
            environment["KEYCHAIN_PASSPHRASE"] = passphrase
            environment["KEYCHAIN_NEW_PASSPHRASE"] = new
            environment["KEYCHAIN_IDENTITY"] = member.flatMap { team.identity[$0] }
            return try cli(["--backend", "vault"] + arguments, stdin: Data("v".utf8), session: nil, extra: environment)
        }
        #expect(try onVault("old", ["vault", "passwd"], new: "new").status == 1)
        #expect(try onVault("old", ["-s", "ci", "set", "k"]).status == 0)
        let changed = try onVault("old", ["vault", "passwd"], new: "new")
        #expect(changed.status == 0 && changed.stderr.contains("re-keyed"), "\(changed.stderr)")
        #expect(try onVault("old", ["-s", "ci", "get", "k"]).status == 77)
        #expect(try onVault("new", ["-s", "ci", "get", "k"]).stdoutText == "v")
        let noNew = try onVault("new", ["vault", "passwd"])
        #expect(noNew.status == 77 && noNew.stderr.contains("KEYCHAIN_NEW_PASSPHRASE"), "\(noNew.stderr)")

        let converted = try onVault("new", ["vault", "recipients", "add", team.recipient["alice"]!])
        #expect(converted.status == 0 && converted.stderr.contains("was locked by a passphrase"))
        #expect(try onVault("new", ["-s", "ci", "get", "k"]).status == 77)
        #expect(try onVault(nil, ["-s", "ci", "get", "k"], member: "alice").stdoutText == "v")
        let back = try onVault(nil, ["vault", "passwd"], new: "again", member: "alice")
        #expect(back.status == 0 && back.stderr.contains("no longer open it"), "\(back.stderr)")
        #expect(try onVault(nil, ["-s", "ci", "get", "k"], member: "alice").status == 77)
        #expect(try onVault("again", ["-s", "ci", "get", "k"]).stdoutText == "v")

        chmod(team.identity["alice"]!, 0o644)
        let doctor = try onVault("again", ["doctor"], member: "alice")
        // It names the identity file and the fix, and does not send the user to the vault's path.
        let alice = team.identity["alice"]!
        #expect(doctor.status == 74, "\(doctor.stdoutText)")
        #expect(
            doctor.stdoutText.contains(
                "✗ identity file: other users can open the identity file '\(alice)' (mode 0644): run chmod 600 '\(alice)'\n"
            ),
            "\(doctor.stdoutText)")
        #expect(!doctor.stdoutText.contains("vault's path"))
    }
}

/// What a process run on another thread returned; `done` is signalled after `result` is set.
private final class RacingResult: @unchecked Sendable {
    var result: Result<ProcessResult, any Error>?
    let done = DispatchSemaphore(value: 0)
}
