import Foundation
import TestSupport
import Testing

/// `mv` killed at every step: strace sends SIGKILL at the Nth call of each system call a write
/// makes (a file renamed into place or synced, a D-Bus message or an HTTP request sent), for N = 1, 2, …
/// until the move finishes unkilled. After each kill the secret is at SRC or at DST or at both,
/// whole, never at neither; and the next command finds the stores usable (no lock left held).
@Suite("mv killed at every step loses nothing", .keyringSession)
struct MoveKillTests {
    typealias Places = CopyMoveBackendsTests.Places

    /// A move between backends, and within each backend (its own move, or copy then remove).
    static let moves: [(CLIBackend, CLIBackend)] = [
        (.vault, .treeVault), (.treeVault, .openbao), (.openbao, .secretService), (.secretService, .vault),
        (.vault, .vault), (.treeVault, .treeVault), (.openbao, .openbao), (.secretService, .secretService),
    ]

    /// The calls a move's writes make on each backend.
    static func calls(_ backend: CLIBackend) -> [String] {
        switch backend {
        case .vault, .treeVault: ["rename", "fsync"]
        case .openbao: ["sendto"]
        case .secretService: ["sendto"]
        }
    }

    /// keychain-cli `arguments` on `backend`, under strace, which kills it at the `n`th `call`.
    private func killing(at call: String, _ n: Int, on backend: CLIBackend, _ places: Places, _ arguments: [String])
        throws -> ProcessResult
    {
        try CLIBackend.$overrides.withValue(places.environment(backend)) {
            try runProcess(
                "/usr/bin/strace",
                [
                    "-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):signal=KILL:when=\(n)",
                    "--", keychainCLIPath,
                ]
                    + arguments, environment: cliEnvironment())
        }
    }

    @Test(arguments: moves)
    func aKilledMoveLeavesTheSecretAtOneAddressOrBoth(from source: CLIBackend, to target: CLIBackend) throws {
        let places = try Places()
        let service = uniqueService()
        let options = source == target ? [] : places.options(target)
        // Within one service and to another (OpenBao moves within a service in one check-and-set).
        let destinations = ["\(service)/moved", "\(uniqueService())/moved"]
        var kills = 0
        for call in Set(Self.calls(source) + Self.calls(target)).sorted() {
            for destination in destinations {
                for n in 1...60 {
                    let value = "secret-\(call)-\(n)-\(UUID().uuidString)"
                    #expect(
                        try places.run(on: source, ["-s", service, "set", "k"], stdin: Data(value.utf8)).status == 0)
                    let moved = try killing(
                        at: call, n, on: source, places, ["-s", service, "mv", "k", destination] + options)
                    let slash = destination.firstIndex(of: "/")!
                    let (dstService, dstKey) = (
                        String(destination[..<slash]), String(destination[destination.index(after: slash)...])
                    )
                    let atSource = try places.run(on: source, ["-s", service, "get", "k"])
                    let atTarget = try places.run(on: target, ["-s", dstService, "get", dstKey])
                    let found = [atSource, atTarget].filter { $0.status == 0 }.map(\.stdoutText)
                    #expect(!found.isEmpty, "\(call) #\(n) to \(destination): the secret is at neither address")
                    #expect(found.allSatisfy { $0 == value }, "\(call) #\(n): \(found.count) copies, not all whole")
                    _ = try places.run(on: source, ["-s", service, "delete", "k"])
                    _ = try places.run(on: target, ["-s", dstService, "delete", dstKey])
                    guard moved.signaled && moved.status == SIGKILL else {
                        #expect(moved.status == 0, "\(call) #\(n): \(moved.stderr)")
                        #expect(atSource.status == 1 && atTarget.status == 0, "\(call) #\(n): not moved")
                        break
                    }
                    kills += 1
                }
            }
        }
        #expect(kills > 0, "no call was ever killed: the injection did not happen")
    }
}
