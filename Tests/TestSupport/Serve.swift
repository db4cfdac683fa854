import Foundation
import Testing

/// A backend `keychain-cli serve` keeps its items in, for the serve suites: each test gets a new
/// one (a vault, a team vault with an identity, a KV mount of the shared OpenBao server).
public enum ServedBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case vault
    case teamVault
    /// A team tree vault (a directory, one file per item) with an identity.
    case treeVault
    case openbao

    public var testDescription: String { rawValue }

    /// Every backend, or those `$TEST_BACKENDS` names (as ``CLIBackend/allCases``).
    public static var allCases: [ServedBackend] {
        let all: [ServedBackend] = [.vault, .teamVault, .treeVault, .openbao]
        guard let names = ProcessInfo.processInfo.environment["TEST_BACKENDS"], !names.isEmpty else { return all }
        return all.filter { names.split(separator: ",").contains(Substring($0.rawValue)) }
    }

    /// Runs `body` with every `keychain-cli` it starts (``cli(_:stdin:session:extra:timeout:)``,
    /// ``served(_:extra:)``) using a new backend of this kind; `body` gets what opens it
    /// directly (the vault's path and, for a team vault, the identity file; the mount).
    public func run(_ body: (ServedStorage) throws -> Void) throws {
        switch self {
        case .vault:
            try CLIBackend.withVault { path in try body(ServedStorage(vault: path)) }
        case .teamVault:
            let directory = try ScratchDirectory("team-serve")
            defer { directory.remove() }
            let identity = directory.path("identity.txt")
            let recipient = try cli(["vault", "keygen", "-o", identity], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            let vault = directory.path("team.age")
            let environment: [String: String?] = [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault, "KEYCHAIN_IDENTITY": identity,
                "DBUS_SESSION_BUS_ADDRESS": nil,
            ]
            try CLIBackend.$overrides.withValue(environment) {
                let made = try cli(["vault", "recipients", "add", recipient], session: nil)
                guard made.status == 0 else { throw FixtureFailed(detail: "team vault: \(made.stderr)") }
                try body(ServedStorage(vault: vault, identity: identity))
            }
        case .treeVault:
            try TreeFixture.run { tree in try body(ServedStorage(vault: tree.vault, identity: tree.identity)) }
        case .openbao:
            try CLIBackend.withOpenBaoMount { server, mount in try body(ServedStorage(mount: mount, server: server)) }
        }
    }
}

/// The folder of the Python Secret Service clients the serve tests run (Tests/clients).
public let clientScripts = packageRoot.appendingPathComponent("Tests/clients").path

/// Where a served backend keeps the items, to look at them without keychain-cli.
public struct ServedStorage {
    public var vault: String?
    public var identity: String?
    public var mount: String?
    public var server: OpenBaoServer?

    init(vault: String? = nil, identity: String? = nil, mount: String? = nil, server: OpenBaoServer? = nil) {
        self.vault = vault
        self.identity = identity
        self.mount = mount
        self.server = server
    }

    /// What a keychain-cli started by serve's command needs to open the backend itself, which serve
    /// does not pass on: the vault's passphrase as $PW, OpenBao's token as $TOKEN (Tests/clients
    /// and the scripts of the tests give them as KEYCHAIN_PASSPHRASE and BAO_TOKEN).
    public var secretsForCommands: [String: String] {
        ["PW": CLIBackend.passphrase, "TOKEN": server?.rootToken ?? ""]
    }
}

/// Runs `keychain-cli serve --no-mask -- sh -c SCRIPT` on the current backend (its output as
/// written: MaskedExecTests test the masking): the script's programs
/// (secret-tool, python3, keychain-cli itself, `$GCL` git-credential-libsecret) find the served
/// Secret Service on the private bus. The script runs in a directory of its own, with
/// ``servedScriptFunctions`` defined.
public func served(_ script: String, extra: [String: String] = [:], timeout: Double = 60) throws -> ProcessResult {
    var environment = extra
    environment["PATH"] = URL(fileURLWithPath: keychainCLIPath).deletingLastPathComponent().path + ":/usr/bin:/bin"
    // The Secret Service clients of Tests/clients (python3 NAME.py), on jeepney.
    environment["PYTHONPATH"] = clientScripts
    if environment["GCL"] == nil, let helper = try? libsecretGitHelper.get() { environment["GCL"] = helper }
    // The script's files (logs) go in a directory of its own.
    let directory = try ScratchDirectory("served")
    defer { directory.remove() }
    environment["SCRATCH"] = directory.url.path
    return try cli(
        ["serve", "--no-mask", "--", "sh", "-c", "cd \"$SCRATCH\" || exit 99\n\(servedScriptFunctions)\n" + script],
        session: nil,
        extra: environment,
        timeout: timeout)
}

/// Shell functions for the scripts of ``served(_:extra:timeout:)``, to wait on events rather than
/// for a time:
/// - `monitor [RULE]...`: starts dbus-monitor on the bus (its pid in $monitor) writing to a FIFO
///   that `upto` reads; returns once the monitor is in place (NameLost, the bus's last message to
///   a connection that becomes a monitor).
/// - `upto TEXT`: reads the monitor's lines as they come, each appended to monitor.log, until one
///   holds TEXT (1 if the monitor ended first).
/// - `eventually COMMAND...`: runs COMMAND every 0.05 s until it succeeds, for up to 30 s (1 if it
///   never did): the scripts' one polling loop, as ``eventually(timeout:interval:_:)`` is the
///   tests', for a condition no event tells of.
public let servedScriptFunctions = #"""
    monitor() {
        mkfifo monitor.fifo || return 1
        dbus-monitor --session "$@" > monitor.fifo & monitor=$!
        exec 4< monitor.fifo && upto NameLost
    }
    upto() {
        local line
        while IFS= read -r line <&4; do
            printf '%s\n' "$line" >> monitor.log
            case $line in *"$1"*) return 0 ;; esac
        done
        return 1
    }
    eventually() {
        local tries=0
        until "$@"; do [ $tries -lt 600 ] || return 1; sleep 0.05; tries=$((tries + 1)); done
    }
    """#
