import Foundation
import TestSupport
import Testing

/// Who runs keychain-cli in a holder's test: the test's own user (root in CI), or nobody, a plain
/// user (through setpriv, so only where the test runs as root).
enum HolderUser: String, CustomTestStringConvertible, CaseIterable {
    case current, nobody

    var testDescription: String { rawValue }

    /// The users a test runs as here: nobody too where the test may become nobody (as root).
    static var available: [HolderUser] { geteuid() == 0 ? [.current, .nobody] : [.current] }
}

/// A vault with one secret, `token`, and a private runtime directory for its holder, each test
/// with its own; keychain-cli run as `user`.
struct UnlockPlace {
    let scratch: ScratchDirectory
    let user: HolderUser
    let secret = "held-secret-\(UUID().uuidString)"
    /// The keychain-cli that runs: the build's own, or (as nobody) a copy any user may run.
    let binary: String
    /// A passphrase tree vault (a directory) instead of a vault file.
    let tree: Bool
    var vault: String { scratch.path(tree ? "tree" : "v.age") }
    /// $XDG_RUNTIME_DIR: `run`, or (`longRuntime`) a name that makes the socket's path longer
    /// than a Unix socket's address holds, or (`inMemory`) a directory on /dev/shm's tmpfs, as
    /// `edit` needs.
    let runtime: String
    var passphraseFile: String { scratch.path("pass") }

    init(as user: HolderUser = .current, longRuntime: Bool = false, tree: Bool = false, inMemory: Bool = false)
        throws
    {
        scratch = try ScratchDirectory("unlock")
        (self.user, self.tree) = (user, tree)
        runtime =
            inMemory
            ? "/dev/shm/keychain-cli-test-\(UUID().uuidString)"
            : scratch.path(longRuntime ? "run-" + String(repeating: "r", count: 120) : "run")
        binary = user == .nobody ? try scratch.openWithCopyOfCLI() : keychainCLIPath
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        chmod(runtime, 0o700)
        try Data(CLIBackend.passphrase.utf8).write(to: URL(fileURLWithPath: scratch.path("pass")))
        if user == .nobody {
            chmod(scratch.path("pass"), 0o644)
            _ = try runProcess("/bin/chown", ["-R", "nobody:nogroup", runtime], environment: [:])
        }
        if tree {
            let made = try run(["vault", "init"], passphrase: true)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let stored = try run(["set", "token"], passphrase: true, stdin: Data(secret.utf8))
        #expect(stored.status == 0, "\(stored.stderr)")
    }

    /// keychain-cli on this vault; with no passphrase anywhere unless `passphrase`; without
    /// $KEYCHAIN_VAULT when not `namingVault`.
    func run(
        _ arguments: [String], passphrase: Bool = false, stdin: Data? = nil, namingVault: Bool = true,
        extra more: [String: String] = [:]
    ) throws -> ProcessResult {
        var extra = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT_WORK_FACTOR": "10", "XDG_RUNTIME_DIR": runtime,
            "HOME": scratch.path("home"),
        ]
        if namingVault { extra["KEYCHAIN_VAULT"] = vault }
        if passphrase { extra["KEYCHAIN_PASSPHRASE"] = CLIBackend.passphrase }
        extra.merge(more) { $1 }
        guard user == .nobody else { return try cli(arguments, stdin: stdin ?? Data(), session: nil, extra: extra) }
        return try runAsNobody([binary] + arguments, environment: extra, stdin: stdin)
    }

    /// The holders serving this place's runtime directory.
    func holders() -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter(isHolder)
    }

    /// Whether `pid` is this place's holder: `keychain-cli holder` with its XDG_RUNTIME_DIR.
    func isHolder(_ pid: Int32) -> Bool {
        guard let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
            command == Data("keychain-cli\0holder\0".utf8),
            let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ")
        else { return false }
        return environment.split(separator: 0).contains(Data("XDG_RUNTIME_DIR=\(runtime)".utf8))
    }

    /// Kills this place's holders (SIGKILL), each only while its pid is still a holder's, and
    /// waits (10 s at most) until none is left.
    func killHolders() {
        for pid in holders() { signalVerified(pid, SIGKILL) { isHolder(pid) } }
        eventually(timeout: 10) { holders().isEmpty }
    }

    /// Locks everything and waits for the holder to end (a second at most), then removes the files.
    func finish() {
        _ = try? run(["lock", "--all"])
        eventually(timeout: 2) { holders().isEmpty }
        killHolders()
        if runtime.hasPrefix("/dev/shm/") { try? FileManager.default.removeItem(atPath: runtime) }
        scratch.remove()
    }
}

/// A memory figure of process `pid` from /proc/PID/status, in KiB: `VmRSS` (resident now) or
/// `VmHWM` (the most it has had).
func memoryKiB(_ pid: Int32, _ field: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
}
