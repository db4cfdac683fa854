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
        // and waited the default 5 s).
        let started = Date()
        let fromEnvironment = try cli(["doctor", "--json"], session: session, extra: ["KEYCHAIN_TIMEOUT": "1"])
        #expect(fromEnvironment.status == 75)
        #expect(Date().timeIntervalSince(started) < 4.5)
        #expect(try statuses(fromEnvironment) == ["ok", "ok", "failed", "skipped", "skipped"])
        #expect(try cli(["doctor"], session: session, extra: ["KEYCHAIN_TIMEOUT": "soon"]).status == 64)
    }
}
