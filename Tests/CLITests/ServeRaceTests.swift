import Foundation
import TestSupport
import Testing

/// serve under writers racing it and clients attacking it, a minute each (Tests/clients): what
/// an outside attack found (lost writes, a crash any client could cause), held as facts.
@Suite("serve: racing writers and a fuzzing client")
struct ServeRaceTests {
    /// keychain-cli's `set` and serve's non-replacing CreateItem and Attributes moves of the same
    /// SERVICE/KEY, raced for a minute (serve's write within milliseconds of the acknowledged
    /// `set`, before its watcher can have seen it): no acknowledged write of either is lost. Where
    /// serve's index decided "this name is free", 18 of 63 rounds lost keychain-cli's secret on
    /// the vault, and every round on OpenBao.
    @Test(arguments: [ServedBackend.vault, .openbao])
    func racingWritersLoseNoAcknowledgedWrite(backend: ServedBackend) throws {
        try backend.run { storage in
            let result = try served(
                "python3 \"$CLIENTS/race.py\" race 60",
                extra: storage.secretsForCommands.merging(["CLIENTS": clientScripts]) { a, _ in a }, timeout: 300)
            let words = result.stdoutText.split(separator: " ")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(words.first == "rounds" && Int(words.dropFirst().first ?? "") ?? 0 >= 20, "\(result.stdoutText)")
            #expect(result.stdoutText.hasSuffix(" lost 0\n"), "\(result.stdoutText) \(result.stderr.suffix(2000))")
        }
    }

    /// Three clients send random sequences of calls (creates, deletes, attribute and label changes,
    /// secrets, searches, locks, sessions, on shared items, the session collection included)
    /// without waiting for the replies, while keychain-cli writes the same backend, for a minute:
    /// every call gets one reply, in the order of the calls, with an error the specification
    /// names; serve is alive after, and the login collection serves exactly the secrets the
    /// backend holds. Before the fix a Properties.Set queued behind an item's Delete killed serve
    /// (SIGSEGV) within seconds.
    @Test(arguments: [ServedBackend.vault, .openbao])
    func aFuzzingClientNeitherKillsServeNorLeavesItInconsistent(backend: ServedBackend) throws {
        let seed = Int.random(in: 1...1_000_000)
        try backend.run { storage in
            let result = try served(
                "python3 \"$CLIENTS/fuzz.py\" 3 60 \(seed)",
                extra: storage.secretsForCommands.merging(["CLIENTS": clientScripts]) { a, _ in a }, timeout: 300)
            #expect(result.status == 0, "seed \(seed): \(result.stderr.suffix(2000))")
            #expect(result.stdoutText.hasSuffix(" alive consistent\n"), "seed \(seed): \(result.stdoutText)")
            let calls = Int(result.stdoutText.split(separator: " ").dropFirst().first ?? "") ?? 0
            #expect(calls >= 1000, "seed \(seed): \(result.stdoutText)")
        }
    }
}
