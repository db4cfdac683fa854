import Foundation
import TestSupport
import Testing

/// The kernel's wait channels of a process's threads (`/proc/PID/task/*/wchan`).
private func waitChannels(_ pid: Int32) -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/wchan", encoding: .utf8) }
}

/// Polls `condition` every 50 ms for up to `seconds`.
/// `watch` as a long-running process meets it: output nobody reads, a vault that git checks out or
/// Kubernetes swaps, a re-key by another process, a keyring that is locked and unlocked.
@Suite("watch rides through what happens around it", .keyringSession)
final class WatchResilienceTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("watch-resilience") }
    deinit { scratch.remove() }

    /// SIGTERM ends `watch` with 0 while its writes are blocked on a full pipe (its reader reads
    /// nothing): a line is 2 KiB, and 100 of them fill the pipe's 64 KiB three times.
    @Test(arguments: CLIBackend.allCases)
    func aSignalEndsWatchWhileItsOutputIsBlocked(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let output = Pipe()  // never read
            let process = try ChildProcess(
                keychainCLIPath, ["-s", s, "watch", "--interval", "0.2"], environment: cliEnvironment(),
                files: [(0, "/dev/null", O_RDONLY), (2, "/dev/null", O_WRONLY)],
                descriptors: [(1, output.fileHandleForWriting.fileDescriptor)])
            try output.fileHandleForWriting.close()
            defer { process.stop(grace: 0) }
            // Watching once the main thread waits for signals.
            #expect(eventually { waitChannels(process.pid).first?.contains("sigtimedwait") == true })
            // More than a pipe holds (64 KiB) of output; a tree vault's names are file names
            // (at most 251 bytes), so it takes more, shorter ones.
            let (length, count) = backend == .treeVault ? (200, 400) : (2048, 100)
            let name = String(repeating: "k", count: length)
            let lines = (0..<count).map { "\(name)\($0)=v\n" }.joined()
            let imported = try cli(["-s", s, "import"], input: lines)
            #expect(imported.status == 0, "\(imported.stderr)")
            let blocked = eventually { waitChannels(process.pid).contains { $0.contains("pipe") } }
            #expect(blocked, "the watcher's write never blocked: \(waitChannels(process.pid))")
            process.signal(SIGTERM)
            #expect(process.wait(timeout: 10), "watch did not end within 10 s of SIGTERM")
            #expect(process.ending == "exited with status 0")
            _ = try cli(["-s", s, "reset", "--yes"])
        }
    }

    /// The docs recommend keeping the vault in git: `git checkout` unlinks it and writes the
    /// other version in place, which a watcher may read missing or half written.
    @Test func aVaultWatchRidesThroughGitCheckoutsOfTheVault() throws {
        let repository = scratch.path("repository")
        func git(_ arguments: [String]) throws {
            let result = try runProcess(
                "/usr/bin/git", ["-C", repository, "-c", "user.name=t", "-c", "user.email=t@t"] + arguments,
                environment: ["PATH": "/usr/bin:/bin", "HOME": scratch.path("")])
            #expect(result.status == 0, "git \(arguments): \(result.stderr)")
        }
        try FileManager.default.createDirectory(atPath: repository, withIntermediateDirectories: true)
        try git(["init", "-q", "-b", "main"])
        let vault = repository + "/ci/secrets.age"
        try CLIBackend.$overrides.withValue(CLIBackend.vaultEnvironment(vault)) {
            // 300 items of 400 bytes: a file of about 200 KiB.
            let secret = String(repeating: "s", count: 400)
            #expect(
                try cli(["-s", "ci", "import"], input: (0..<300).map { "K\($0)=\(secret)\n" }.joined()).status == 0)
            try git(["add", "ci"])
            try git(["commit", "-qm", "one"])
            #expect(try cli(["-s", "ci", "set", "extra"], input: "x").status == 0)
            try git(["commit", "-qam", "two"])
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", "ci"], service: "ci")
            try git(["commit", "-qam", "ready"])  // the watch's own ready key came and went
            for _ in 0..<3 {
                try git(["checkout", "-q", "HEAD~2", "--", "ci/secrets.age"])
                #expect(watch.nextLines(1, timeout: 10) == ["deleted ci extra"])
                try git(["checkout", "-q", "HEAD", "--", "ci/secrets.age"])
                #expect(watch.nextLines(1, timeout: 10) == ["created ci extra"])
            }
            let result = try #require(watch.stop(SIGTERM))
            #expect(result.status == 0 && result.stdoutText.isEmpty, "\(result.stdoutText) \(result.stderr)")
        }
    }

    /// A Kubernetes secret volume: `vault.age -> ..data/vault.age`, `..data -> ..TIMESTAMP`; an
    /// update writes a new `..TIMESTAMP` directory, renames a new `..data` link over the old one
    /// and removes the old directory. Removing the vault's own directory still ends the watch (74).
    @Test func aVaultWatchFollowsASwappedSecretDirectoryAndEndsWhenItsDirectoryIsGone() throws {
        let versions = scratch.path("versions")
        let mount = scratch.path("mount")
        for directory in [versions, mount] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try CLIBackend.$overrides.withValue(CLIBackend.vaultEnvironment(versions + "/one.age")) { () throws in
            #expect(try cli(["-s", "s", "set", "a"], input: "1").status == 0)
        }
        try FileManager.default.copyItem(atPath: versions + "/one.age", toPath: versions + "/two.age")
        try CLIBackend.$overrides.withValue(CLIBackend.vaultEnvironment(versions + "/two.age")) { () throws in
            #expect(try cli(["-s", "s", "set", "b"], input: "2").status == 0)
        }
        func publish(_ version: String, as name: String, replacing old: String?) throws {
            try FileManager.default.createDirectory(atPath: "\(mount)/\(name)", withIntermediateDirectories: false)
            try FileManager.default.copyItem(atPath: "\(versions)/\(version).age", toPath: "\(mount)/\(name)/vault.age")
            try FileManager.default.createSymbolicLink(atPath: "\(mount)/..data_tmp", withDestinationPath: name)
            #expect(rename("\(mount)/..data_tmp", "\(mount)/..data") == 0)
            if let old { try FileManager.default.removeItem(atPath: "\(mount)/\(old)") }
        }
        try publish("one", as: "..2026_11_24_a", replacing: nil)
        try FileManager.default.createSymbolicLink(
            atPath: mount + "/vault.age", withDestinationPath: "..data/vault.age")
        var environment = CLIBackend.vaultEnvironment(mount + "/vault.age")
        environment["KEYCHAIN_VAULT"] = nil  // --vault below
        var variables = cliEnvironment(session: nil)
        for (name, value) in environment { variables[name] = value }
        let outputFile = scratch.path("watch.out")
        let process = try ChildProcess(
            keychainCLIPath, ["--vault", mount + "/vault.age", "-s", "s", "watch", "--interval", "0.2"],
            environment: variables,
            files: [(0, "/dev/null", O_RDONLY), (1, outputFile, O_WRONLY | O_CREAT | O_TRUNC)], descriptors: [(2, 1)])
        defer { process.stop(grace: 0) }
        #expect(eventually { waitChannels(process.pid).first?.contains("sigtimedwait") == true })
        // Each swap's one change is awaited as the watch reports it: it goes on across each swap,
        // and its whole output, checked below, holds no other report.
        func reported(_ text: String) -> Bool {
            eventually(timeout: 10) {
                ((try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "").hasSuffix(text)
            }
        }
        try publish("two", as: "..2026_11_24_b", replacing: "..2026_11_24_a")
        #expect(reported("created s b\n"))
        try publish("one", as: "..2026_11_24_c", replacing: "..2026_11_24_b")
        #expect(reported("created s b\ndeleted s b\n"))
        #expect(process.isRunning, "the watch ended on a swap")
        try FileManager.default.removeItem(atPath: mount)
        #expect(process.wait(timeout: 10))
        let text = (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
        #expect(process.ending == "exited with status 74", "\(text)")
        #expect(text.hasPrefix("created s b\ndeleted s b\nkeychain-cli: the vault's directory"), "\(text)")
    }

    /// `vault passwd` by another process: a watch whose passphrase comes from a file that now
    /// holds the new passphrase goes on; one whose passphrase no longer opens the vault ends with
    /// 77 after --timeout.
    @Test func aVaultWatchRidesThroughARekeyWhenItsPassphraseFileFollows() throws {
        let vault = scratch.path("rekey/vault.age")
        let file = scratch.path("passphrase")
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: file))
        var environment = CLIBackend.vaultEnvironment(vault)
        environment["KEYCHAIN_PASSPHRASE"] = nil
        try CLIBackend.$overrides.withValue(environment) {
            #expect(try cli(["--passphrase-file", file, "-s", "s", "set", "a"], input: "1").status == 0)
            // (The watch's readiness writes take the variable; the watch itself reads the file first.)
            let following = try WatchProcess(
                ["--interval", "0.2"], global: ["--passphrase-file", file, "-s", "s"],
                extra: ["KEYCHAIN_PASSPHRASE": "old"], service: "s")
            let stale = try WatchProcess(
                ["--interval", "0.2"], global: ["--timeout", "1", "-s", "s"], extra: ["KEYCHAIN_PASSPHRASE": "old"],
                service: "s")
            let passwd = try cli(
                ["--passphrase-file", file, "vault", "passwd"], extra: ["KEYCHAIN_NEW_PASSPHRASE": "new"])
            #expect(passwd.status == 0, "\(passwd.stderr)")
            try Data("new\n".utf8).write(to: URL(fileURLWithPath: file))
            #expect(try cli(["--passphrase-file", file, "-s", "s", "set", "b"], input: "2").status == 0)
            #expect(following.waitForLine(containing: "b")?.text == "created s b")
            let ended = try #require(stale.waitForExit(timeout: 10))
            #expect(ended.status == 77 && ended.stderr.contains("re-keyed"), "\(ended.stderr)")
            let result = try #require(following.stop(SIGTERM))
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        }
    }

    /// gnome-keyring sends ItemChanged for every item of a collection it locks or unlocks. In a
    /// keyring of its own: locking the suite's shared one made a test running beside it fail (77).
    @Test func lockingAndUnlockingTheKeyringIsNoChange() throws {
        let session = try KeyringSession.start()
        defer { session.stop() }
        try KeyringSession.$current.withValue(session) { try lockAndUnlock(session) }
    }

    private func lockAndUnlock(_ session: KeyringSession) throws {
        let s = uniqueService()
        for key in ["a", "b", "c"] { #expect(try cli(["-s", s, "set", key], input: "v").status == 0) }
        let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", s], service: s)
        // (Fixed waits of two and a half polls: what is checked is that the watch reports nothing
        // for the lock and the unlock, an absence no event marks.)
        try session.lockLogin()
        usleep(500_000)
        try session.unlockLogin()
        usleep(500_000)
        #expect(try cli(["-s", s, "set", "b"], input: "v2").status == 0)
        #expect(watch.nextLines(1) == ["changed \(s) b"])
        let result = try #require(watch.stop(SIGTERM))
        // Nothing for the lock and the unlock. (On a loaded machine keychain-cli's own
        // SecretChanged for that set can come after the settle window and report it once more:
        // a known repeat of the set's line, not of a lock's.)
        let rest = result.stdoutText.split(separator: "\n")
        #expect(result.status == 0 && rest.allSatisfy { $0 == "changed \(s) b" }, "\(result.stdoutText)")
        _ = try cli(["-s", s, "reset", "--yes"])
    }
}
