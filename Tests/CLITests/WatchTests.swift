import Foundation
import TestSupport
import Testing

@Suite("keychain-cli watch", .keyringSession)
struct WatchTests {
    @Test(arguments: CLIBackend.allCases)
    func reportsCreationChangeAndDeletionOfTheServiceOnly(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s], service: s)
            #expect(try cli(["-s", s, "set", "token"], input: "first-secret").status == 0)
            #expect(watch.waitForLine(containing: "token")?.text == "created \(s) token")
            #expect(try cli(["-s", other, "set", "elsewhere"], input: "x").status == 0)
            #expect(try cli(["-s", s, "set", "token"], input: "second-secret").status == 0)
            #expect(watch.nextLines(1).first == "changed \(s) token")
            #expect(try cli(["-s", s, "delete", "token"]).status == 0)
            #expect(watch.nextLines(1).first == "deleted \(s) token")
            let result = try #require(watch.stop(SIGINT))
            #expect(result.status == 0 && !result.signaled, "\(result.stderr)")
            #expect(!result.stdoutText.contains("elsewhere"))
            #expect(result.stderr.isEmpty)
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func jsonLinesNameKindServiceKeyAndTimeButNeverTheSecret(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let watch = try WatchProcess(
                ["--all-services", "--json", "--interval", "0.2"], global: ["-s", s], service: s)
            let before = Date()
            #expect(try cli(["-s", s, "set", "api-key"], input: "hunter2-very-secret").status == 0)
            let line = try #require(watch.waitForLine(containing: "api-key")?.text)
            #expect(!line.contains("hunter2"))
            let object = jsonObject(line)
            #expect(object["kind"] as? String == "created")
            #expect(object["service"] as? String == s)
            #expect(object["key"] as? String == "api-key")
            let time = try #require((object["time"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            #expect(time >= before.addingTimeInterval(-1) && time <= Date().addingTimeInterval(1))
            if backend != .openbao { #expect(object["application"] as? String == "keychain-cli") }
            let result = try #require(watch.stop(SIGTERM))
            #expect(result.status == 0 && !result.signaled)
        }
    }

    @Test func intervalOutsideItsRangeIsAUsageError() throws {
        for value in ["0", "-1", "0.01", "7200", "soon"] {
            let result = try cli(["watch", "--interval", value])
            #expect(result.status == 64, "--interval \(value)")
        }
    }

    @Test func vaultWithConcurrentWritersReportsEveryKey() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let watch = try WatchProcess(global: ["-s", s], service: s)
            // Four writers at once, five keys each: each write takes the vault's lock in turn.
            let keys = (0..<4).flatMap { writer in (0..<5).map { "w\(writer)-k\($0)" } }
            // The backend's environment is read here: the writers' threads have no task locals.
            let environment = cliEnvironment()
            let statuses = (0..<4).map { _ in StatusList() }
            DispatchQueue.concurrentPerform(iterations: 4) { writer in
                for index in 0..<5 {
                    let result = try? runProcess(
                        keychainCLIPath, ["-s", s, "set", "w\(writer)-k\(index)"], stdin: Data("v\(index)".utf8),
                        environment: environment)
                    statuses[writer].append(result?.status ?? -1)
                }
            }
            #expect(statuses.flatMap(\.values) == Array(repeating: 0, count: keys.count))
            var created = Set<String>()
            let deadline = Date() + 15
            while created.count < keys.count && Date() < deadline {
                for line in watch.nextLines(1, timeout: 1) where line.hasPrefix("created \(s) ") {
                    created.insert(String(line.dropFirst("created \(s) ".count)))
                }
            }
            #expect(created == Set(keys))
            #expect(try #require(watch.stop()).status == 0)
        }
    }

    /// A reader makes no path: a vault whose directory and its parent do not exist (a mistyped
    /// --vault) is 74 at once, and nothing is made (as root, anywhere).
    @Test func aVaultInADirectoryThatDoesNotExistIsNotWatchedNorMade() throws {
        let scratch = try ScratchDirectory("watch-nowhere")
        defer { scratch.remove() }
        let missing = scratch.path("not/there")
        let result = try cli(
            ["watch", "--vault", missing + "/vault.age"], session: nil,
            extra: CLIBackend.vaultEnvironment(scratch.path("unused.age")).compactMapValues { $0 }, timeout: 20)
        #expect(result.status == 74 && result.stderr.contains("nor its parent exists"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: scratch.path("not")))
    }

    @Test func vaultWhoseDirectoryIsRemovedEndsTheWatchWith74() throws {
        try CLIBackend.withVault { path in
            let s = uniqueService()
            let watch = try WatchProcess(global: ["-s", s], service: s)
            try FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
            let result = try #require(watch.waitForExit())
            #expect(result.status == 74)
            #expect(result.stderr.contains("removed or moved"))
        }
    }

    /// `vault passwd` in another process: the watcher's passphrase no longer opens the vault. It
    /// ends with 77 saying the vault was re-keyed (it said "wrong passphrase" until 2026-11-24, as
    /// if the one it started with had been mistyped).
    @Test func aVaultReKeyedWhileWatchedEndsTheWatchWith77AndSaysSo() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s], service: s)
            let passwd = try cli(["vault", "passwd"], extra: ["KEYCHAIN_NEW_PASSPHRASE": "another one"])
            #expect(passwd.status == 0, "\(passwd.stderr)")
            let result = try #require(watch.waitForExit(timeout: 20))
            #expect(result.status == 77, "\(result.stderr)")
            #expect(
                result.stderr.contains("was re-keyed by another process since this one opened it"), "\(result.stderr)")
            #expect(!result.stderr.contains("wrong passphrase"), "\(result.stderr)")
        }
    }

    @Test func openBaoServerGoingAwayEndsTheWatchWith69() throws {
        let server = try OpenBaoServer.dev()
        defer { server.stop() }
        try CLIBackend.$overrides.withValue(CLIBackend.openBaoEnvironment(server, mount: "secret")) {
            let s = uniqueService()
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s, "--timeout", "2"], service: s)
            server.stop()
            let result = try #require(watch.waitForExit(timeout: 20))
            #expect(result.status == 69, "\(result.stderr)")
            #expect(result.stderr.contains("BAO_ADDR"), "\(result.stderr)")
        }
    }

    @Test func openBaoChangesByTheBaoCLIAreReportedWithinTheInterval() throws {
        try CLIBackend.withOpenBaoMount { server, mount in
            let s = uniqueService()
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s], service: s)
            // (nextLines waits 10 s at most: 50 intervals.)
            #expect(try server.bao(["kv", "put", "-mount=\(mount)", s, "a=1", "b=2"]).status == 0)
            #expect(Set(watch.nextLines(2)) == ["created \(s) a", "created \(s) b"])
            #expect(try server.bao(["kv", "patch", "-mount=\(mount)", s, "b=3"]).status == 0)
            #expect(watch.nextLines(1) == ["changed \(s) b"])
            #expect(try server.bao(["kv", "delete", "-mount=\(mount)", s]).status == 0)
            #expect(Set(watch.nextLines(2)) == ["deleted \(s) a", "deleted \(s) b"])
            #expect(try #require(watch.stop()).status == 0)
        }
    }
}

/// Exit statuses one writer thread collects.
private final class StatusList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int32] = []
    var values: [Int32] { lock.withLock { list } }
    func append(_ status: Int32) { lock.withLock { list.append(status) } }
}
