import Foundation
import TestSupport
import Testing

/// Where serve keeps the secrets it holds: memory locked against swap (VmLck), left out of core
/// dumps (coredump_filter 0, which gdb's gcore honours too), while its command gets the caller's
/// settings back.
@Suite("serve: locked memory, no secret in a core dump")
struct ServeMemoryTests {
    /// The kernel's core dump filter of the test process, which serve's command must get back.
    static func ownDumpFilter() throws -> String {
        try String(contentsOfFile: "/proc/self/coredump_filter", encoding: .utf8)
    }

    @Test func serveLocksItsMemoryAndHidesItFromCoreDumps() throws {
        let script = """
            grep VmLck /proc/$PPID/status
            cat /proc/$PPID/coredump_filter /proc/self/coredump_filter
            """
        try CLIBackend.withVault { _ in
            let served = try cli(["serve", "--no-mask", "--", "sh", "-c", script], session: nil)
            #expect(served.status == 0, "\(served.stderr)")
            let lines = served.stdoutText.split(separator: "\n").map(String.init)
            #expect(lines.count == 3, "\(served.stdoutText)")
            guard lines.count == 3 else { return }
            #expect(lines[1] == "00000000")
            #expect(lines[2] + "\n" == (try Self.ownDumpFilter()))
            let locked =
                Int(lines[0].split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
            if geteuid() == 0 {
                // Root may lock memory: serve does, and says nothing.
                #expect(locked > 0, "\(lines[0])")
                #expect(!served.stderr.contains("not locked"), "\(served.stderr)")
            } else {
                // A limited RLIMIT_MEMLOCK: serve goes on unlocked and says so once.
                #expect(served.stderr.components(separatedBy: "not locked against swap").count == 2)
            }
        }
    }

    /// gcore (gdb) of serve while it holds a secret a client stored and read: the core holds
    /// none of serve's memory, so not the secret. The same gcore of a process that holds the
    /// secret with the usual filter finds it: the search can fail.
    @Test(.enabled(if: geteuid() == 0, "gcore attaches to the non-dumpable serve only as root"))
    func aCoreDumpOfServeHoldsNoSecret() throws {
        let scratch = try ScratchDirectory("serve-core")
        defer { scratch.remove() }
        let secret = "core-dump-secret-\(UUID().uuidString)"
        let script = """
            printf '%s' "$SECRET" | secret-tool store --label=c service core username u
            secret-tool lookup service core username u > /dev/null
            gcore -o "$CORE/serve" $PPID > /dev/null 2>&1
            printf '%s' "$SECRET" | python3 -c 'import os, sys, time; s = sys.stdin.read() * 2; os.kill(os.getpid(), 19)' &
            control=$!
            eventually grep -q '^State:.*stopped' /proc/$control/status  # it holds the secret, stopped
            gcore -o "$CORE/control" $control > /dev/null 2>&1
            kill -9 $control
            """
        try CLIBackend.withVault { _ in
            let served = try TestSupport.served(script, extra: ["SECRET": secret, "CORE": scratch.url.path])
            #expect(served.status == 0, "\(served.stderr)")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)
        let serveCore = try #require(files.first { $0.hasPrefix("serve.") }, "gcore wrote no core of serve: \(files)")
        let controlCore = try #require(files.first { $0.hasPrefix("control.") }, "no control core: \(files)")
        let needle = Data(secret.utf8)
        let serveBytes = try Data(contentsOf: scratch.url.appendingPathComponent(serveCore))
        let controlBytes = try Data(contentsOf: scratch.url.appendingPathComponent(controlCore))
        #expect(serveBytes.count > 0 && serveBytes.range(of: needle) == nil)
        #expect(controlBytes.range(of: needle) != nil, "the control core should hold the secret")
    }

    /// Another user with a limited RLIMIT_MEMLOCK (nobody, under setpriv and prlimit): serve runs
    /// unlocked rather than risk failing allocations later, and says so once.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func aUserWhoMayNotLockIsToldOnce() throws {
        let scratch = try ScratchDirectory("serve-nobody")
        defer { scratch.remove() }
        let binary = try scratch.openWithCopyOfCLI()
        let environment = [
            "PATH": "/usr/bin:/bin", "HOME": scratch.url.path, "TMPDIR": scratch.url.path, "KEYCHAIN_BACKEND": "vault",
            "KEYCHAIN_VAULT": scratch.path("v.age"), "KEYCHAIN_PASSPHRASE": "x", "KEYCHAIN_VAULT_WORK_FACTOR": "10",
        ]
        let served = try runAsNobody(
            [
                "prlimit", "--memlock=65536:65536", binary, "serve", "--no-mask", "--", "sh", "-c",
                "grep VmLck /proc/$PPID/status",
            ], environment: environment)
        #expect(served.status == 0, "\(served.stderr)")
        #expect(served.stdoutText.hasSuffix(" 0 kB\n"), "\(served.stdoutText)")
        #expect(served.stderr.components(separatedBy: "not locked against swap").count == 2, "\(served.stderr)")
        #expect(served.stderr.contains("RLIMIT_MEMLOCK is 64 KiB"))
    }
}
