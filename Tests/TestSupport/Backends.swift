import Foundation
import Testing

/// The backend a CLI test runs `keychain-cli` against. The backend-neutral CLI suites take it as
/// their argument, so that every one of their tests runs on each backend.
public enum CLIBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The private gnome-keyring of the suite's ``KeyringSession``.
    case secretService
    /// A vault file of the test's own, with no session bus at all in the environment.
    case vault
    /// A passphrase tree vault of the test's own (a directory, one file per item), with no
    /// session bus.
    case treeVault
    /// A KV version 2 mount of the test's own on the process's shared OpenBao dev server
    /// (``OpenBaoServer/shared``), with no session bus.
    case openbao

    /// The passphrase of the test vaults.
    public static let passphrase = "correct horse battery staple"

    /// What ``cli(_:stdin:session:extra:timeout:)`` adds to (or, for nil, removes from) the
    /// session's environment while a test body runs on a backend.
    @TaskLocal public static var overrides: [String: String?] = [:]

    public var testDescription: String { rawValue }

    /// Every backend, or those `$TEST_BACKENDS` names (`vault,treeVault`: a developer's quick
    /// run of the backend-neutral suites on the backends a change touches).
    public static var allCases: [CLIBackend] {
        let all: [CLIBackend] = [.secretService, .vault, .treeVault, .openbao]
        guard let names = ProcessInfo.processInfo.environment["TEST_BACKENDS"], !names.isEmpty else { return all }
        return all.filter { names.split(separator: ",").contains(Substring($0.rawValue)) }
    }

    /// The environment of a vault at `path`: a low scrypt work factor keeps tests fast.
    public static func vaultEnvironment(_ path: String) -> [String: String?] {
        [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": path, "KEYCHAIN_PASSPHRASE": passphrase,
            "KEYCHAIN_VAULT_WORK_FACTOR": "10", "DBUS_SESSION_BUS_ADDRESS": nil,
        ]
    }

    /// Runs `body` with every `keychain-cli` it starts using this backend.
    public func run(_ body: () throws -> Void) throws {
        switch self {
        case .secretService:
            try body()
        case .vault:
            try Self.withVault { _ in try body() }
        case .treeVault:
            try Self.withTreeVault { _ in try body() }
        case .openbao:
            try Self.withOpenBaoMount { _, _ in try body() }
        }
    }

    /// Runs `body` with every `keychain-cli` it starts using a new KV mount of the shared OpenBao
    /// dev server; `body` gets the server and the mount's name.
    public static func withOpenBaoMount(_ body: (OpenBaoServer, String) throws -> Void) throws {
        let server = try OpenBaoServer.shared.get()
        let mount = "t" + UUID().uuidString.prefix(12).lowercased().replacing("-", with: "")
        try server.enableKV(mount)
        try $overrides.withValue(openBaoEnvironment(server, mount: mount)) { try body(server, mount) }
    }

    /// The environment of the openbao backend on `server`'s `mount`, as root.
    public static func openBaoEnvironment(_ server: OpenBaoServer, mount: String) -> [String: String?] {
        [
            "KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": server.address, "BAO_TOKEN": server.rootToken,
            "KEYCHAIN_OPENBAO_MOUNT": mount, "DBUS_SESSION_BUS_ADDRESS": nil,
        ]
    }

    /// Runs `body` with every `keychain-cli` it starts using a new vault (not created yet, nor its
    /// directory) in a scratch directory, removed afterwards; `body` gets the vault's path.
    public static func withVault(_ body: (String) throws -> Void) throws {
        let directory = try ScratchDirectory("vault")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        let path = directory.path("keychain-cli/vault.age")
        try $overrides.withValue(vaultEnvironment(path)) { try body(path) }
    }
}

extension CLIBackend {
    /// Whether this backend is a vault of either layout (a file, a tree).
    public var isVault: Bool { self == .vault || self == .treeVault }

    /// Runs `body` with every `keychain-cli` it starts using a new passphrase tree vault (made
    /// by `vault init`) in a scratch directory, removed afterwards; `body` gets its directory.
    public static func withTreeVault(_ body: (String) throws -> Void) throws {
        let directory = try ScratchDirectory("tree")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        let path = directory.path("vault")
        try $overrides.withValue(vaultEnvironment(path)) {
            let made = try cli(["vault", "init"], session: nil)
            guard made.status == 0 else { throw FixtureFailed(detail: "tree vault: \(made.stderr)") }
            try body(path)
        }
    }
}

/// The environment `keychain-cli` gets in a test: `session`'s (or a minimal one without a bus),
/// with the current backend's overrides applied.
public func cliEnvironment(session: KeyringSession? = KeyringSession.current) -> [String: String] {
    var environment = session?.environment ?? ["PATH": "/usr/bin:/bin", "HOME": NSTemporaryDirectory()]
    for (name, value) in CLIBackend.overrides { environment[name] = value }
    // `make test-tsan` runs the serve suites on a keychain-cli built with ThreadSanitizer, whose
    // reports go where these options say.
    if let options = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] { environment["TSAN_OPTIONS"] = options }
    return environment
}
