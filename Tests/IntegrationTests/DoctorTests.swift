import Foundation
import TestSupport
import Testing

@Suite("doctor: one line per check, the first failure's exit code")
struct DoctorTests {
    private func statuses(_ result: ProcessResult) throws -> [String] {
        let checks = try JSONSerialization.jsonObject(with: result.stdout) as! [[String: String]]
        #expect(
            checks.map { $0["name"]! } == [
                "session bus", "Secret Service provider", "default keyring", "default keyring unlocked",
                "store, read and delete a probe item",
            ])
        return checks.map { $0["status"]! }
    }

    /// The fix doctor's ✗ line gives: the text after the failure, which `get` must end with too
    /// (one hint table for both, docs/commands.md#doctor).
    private func expectSameFix(
        _ arguments: [String], session: KeyringSession?, extra: [String: String] = [:], mentioning fragment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let doctor = try cli(arguments + ["doctor"], session: session, extra: extra)
        let get = try cli(arguments + ["get", "k"], session: session, extra: extra)
        let failed = doctor.stdoutText.split(separator: "\n").first { $0.hasPrefix("✗ ") }.map(String.init) ?? ""
        let said = get.stderr.trimmingCharacters(in: .newlines)
        let (line, message) = (Array(failed), Array(said))
        var common = 0
        while common < min(line.count, message.count),
            line[line.count - 1 - common] == message[message.count - 1 - common]
        {
            common += 1
        }
        let shared = String(line.suffix(common))
        #expect(doctor.status == get.status, "\(doctor.stdoutText)", sourceLocation: sourceLocation)
        #expect(
            shared.contains(fragment) && shared.count >= 20 && failed.hasSuffix(shared),
            "doctor: \(failed)\nget: \(said)", sourceLocation: sourceLocation)
    }

    @Test func aFailedCheckSaysTheFixThatGetSays() throws {
        try expectSameFix([], session: nil, mentioning: "dbus-run-session")
        let noProvider = try KeyringSession.start(.none)
        defer { noProvider.stop() }
        try expectSameFix([], session: noProvider, mentioning: "gnome-keyring")
        let locked = try KeyringSession.start()
        defer { locked.stop() }
        try locked.lockLogin()
        try expectSameFix([], session: locked, mentioning: "Unlock it")
        let frozen = try KeyringSession.start()
        defer { frozen.stop() }
        frozen.freezeDaemon()
        try expectSameFix(["--timeout", "1"], session: frozen, mentioning: "raise --timeout")
        // The vault: a wrong passphrase, and an identity that is not a recipient.
        let scratch = try ScratchDirectory("doctor")
        defer { scratch.remove() }
        let vault = CLIBackend.vaultEnvironment(scratch.path("v.age")).compactMapValues { $0 }
        #expect(try cli(["set", "k"], stdin: Data("v".utf8), session: nil, extra: vault).status == 0)
        var wrong = vault
        wrong["KEYCHAIN_PASSPHRASE"] = "wrong"
        try expectSameFix([], session: nil, extra: wrong, mentioning: "Check $KEYCHAIN_PASSPHRASE")
        let ours = scratch.path("ours.txt")
        let stranger = scratch.path("stranger.txt")
        let recipient = try cli(["vault", "keygen", "-o", ours], session: nil).stdoutText
        #expect(try cli(["vault", "keygen", "-o", stranger], session: nil).status == 0)
        var team = ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": scratch.path("team.age")]
        let made = try cli(
            ["vault", "recipients", "add", recipient.trimmingCharacters(in: .newlines)], session: nil, extra: team)
        #expect(made.status == 0, "\(made.stderr)")
        team["KEYCHAIN_IDENTITY"] = stranger
        try expectSameFix([], session: nil, extra: team, mentioning: "--identity PATH")
    }

    @Test func aWorkingKeyringPassesEveryCheckAndLeavesNothingBehind() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        let text = try cli(["doctor"], session: session)
        #expect(text.status == 0, "\(text.stdoutText)")
        #expect(text.stdoutText.split(separator: "\n").allSatisfy { $0.hasPrefix("✓ ") })
        #expect(text.stdoutText.contains("✓ default keyring: /org/freedesktop/secrets/collection/login"))
        let json = try cli(["doctor", "--json"], session: session)
        #expect(try statuses(json) == Array(repeating: "ok", count: 5))
        #expect(try cli(["list", "--all-services"], session: session).stdoutText.isEmpty, "the probe item stayed")
    }

    @Test func noBusFailsFirstAndSkipsTheRest() throws {
        let result = try cli(["doctor", "--json"], session: nil)
        #expect(result.status == 69)
        #expect(try statuses(result) == ["failed", "skipped", "skipped", "skipped", "skipped"])
        let text = try cli(["doctor"], session: nil)
        #expect(text.stdoutText.hasPrefix("✗ session bus: no D-Bus session bus"))
        #expect(text.stderr.isEmpty, "doctor repeated its failure on stderr")
    }

    @Test func eachBrokenSetUpFailsAtItsOwnCheck() throws {
        let noProvider = try KeyringSession.start(.none)
        defer { noProvider.stop() }
        let provider = try cli(["doctor", "--json"], session: noProvider)
        #expect(provider.status == 69)
        #expect(try statuses(provider) == ["ok", "failed", "skipped", "skipped", "skipped"])

        let noLogin = try KeyringSession.start(.noLoginCollection)
        defer { noLogin.stop() }
        let collection = try cli(["doctor", "--json"], session: noLogin)
        #expect(collection.status == 69)
        #expect(try statuses(collection) == ["ok", "ok", "failed", "skipped", "skipped"])

        let locked = try KeyringSession.start()
        defer { locked.stop() }
        try locked.lockLogin()
        let unlocked = try cli(["doctor", "--json"], session: locked)
        #expect(unlocked.status == 77)
        #expect(try statuses(unlocked) == ["ok", "ok", "ok", "failed", "skipped"])
    }

    @Test func aKeyringThatNeverAnswersTimesOut() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        session.freezeDaemon()
        let result = try cli(["--timeout", "1", "doctor", "--json"], session: session)
        #expect(result.status == 75)
        #expect(try statuses(result) == ["ok", "ok", "failed", "skipped", "skipped"])
        // $KEYCHAIN_TIMEOUT bounds it the same way (doctor read only the flag until 2026-11-24,
        // and waited the default 5 s): the failed check names the limit it waited for.
        let fromEnvironment = try cli(["doctor", "--json"], session: session, extra: ["KEYCHAIN_TIMEOUT": "1"])
        #expect(fromEnvironment.status == 75)
        #expect(fromEnvironment.stdoutText.contains("1 s"), "\(fromEnvironment.stdoutText)")
        #expect(try statuses(fromEnvironment) == ["ok", "ok", "failed", "skipped", "skipped"])
        #expect(try cli(["doctor"], session: session, extra: ["KEYCHAIN_TIMEOUT": "soon"]).status == 64)
    }
}
