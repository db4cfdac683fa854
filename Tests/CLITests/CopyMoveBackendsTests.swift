import Foundation
import TestSupport
import Testing

/// `cp` and `mv` from one backend to another, each ordered pair of Secret Service, vault file,
/// tree vault and OpenBao: the secret arrives whole, a move leaves nothing behind, an occupied
/// DST is kept; a Secret Service item's label and attributes survive a round trip through a vault.
@Suite("cp and mv between backends", .keyringSession)
struct CopyMoveBackendsTests {
    static let pairs: [(CLIBackend, CLIBackend)] = CLIBackend.allCases.flatMap { from in
        CLIBackend.allCases.filter { $0 != from }.map { (from, $0) }
    }

    /// Where each backend is for one test: a vault file, a tree vault, a KV mount, and the
    /// suite's keyring; the environment that opens each, and the --to-* options that name it.
    struct Places {
        let directory: ScratchDirectory
        let server: OpenBaoServer
        let mount: String

        init() throws {
            directory = try ScratchDirectory("cp-mv")
            server = try OpenBaoServer.shared.get()
            mount = "m" + UUID().uuidString.prefix(12).lowercased().replacing("-", with: "")
            try server.enableKV(mount)
            try Data(CLIBackend.passphrase.utf8).write(to: URL(fileURLWithPath: passphraseFile))
            let made = try CLIBackend.$overrides.withValue(environment(.treeVault)) {
                try cli(["vault", "init"])
            }
            guard made.status == 0 else { throw FixtureFailed(detail: made.stderr) }
        }

        var passphraseFile: String { directory.path("passphrase") }

        func path(_ backend: CLIBackend) -> String {
            directory.path(backend == .treeVault ? "tree" : "vault.age")
        }

        /// The environment that opens `backend` (and, for OpenBao, the server for a --to-backend).
        func environment(_ backend: CLIBackend) -> [String: String?] {
            var variables: [String: String?] = [
                "BAO_ADDR": server.address, "BAO_TOKEN": server.rootToken, "KEYCHAIN_OPENBAO_MOUNT": mount,
                "KEYCHAIN_VAULT_WORK_FACTOR": "10", "KEYCHAIN_BACKEND": backend.name,
            ]
            if backend.isVault {
                variables["KEYCHAIN_VAULT"] = path(backend)
                variables["KEYCHAIN_PASSPHRASE"] = CLIBackend.passphrase
            }
            return variables
        }

        /// The options that name `backend` as DST's.
        func options(_ backend: CLIBackend) -> [String] {
            backend.isVault
                ? ["--to-vault", path(backend), "--to-passphrase-file", passphraseFile]
                : ["--to-backend", backend.name]
        }

        func run(on backend: CLIBackend, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
            try CLIBackend.$overrides.withValue(environment(backend)) { try cli(arguments, stdin: stdin) }
        }
    }

    @Test(arguments: pairs)
    func secretsAreCopiedAndMovedToAnotherBackend(from source: CLIBackend, to target: CLIBackend) throws {
        let places = try Places()
        let service = uniqueService()
        let entry = "pw-\(UUID().uuidString)\nusername: octocat\n\nnotes"
        #expect(try places.run(on: source, ["-s", service, "set", "a"], stdin: Data(entry.utf8)).status == 0)
        #expect(try places.run(on: source, ["-s", service, "set", "b"], stdin: Data("bee".utf8)).status == 0)

        let copied = try places.run(on: source, ["-s", service, "cp", "a", "a"] + places.options(target))
        #expect(copied.status == 0, "\(copied.stderr)")
        #expect(try places.run(on: target, ["-s", service, "get", "a"]).stdoutText == entry)
        #expect(try places.run(on: source, ["-s", service, "get", "a"]).stdoutText == entry)

        let again = try places.run(on: source, ["-s", service, "mv", "b", "a"] + places.options(target))
        #expect(again.status == 73, "\(again.stderr)")
        #expect(try places.run(on: source, ["-s", service, "get", "b"]).stdoutText == "bee")

        let moved = try places.run(on: source, ["-s", service, "mv", "b", "moved/b"] + places.options(target))
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(try places.run(on: target, ["-s", "moved", "get", "b"]).stdoutText == "bee")
        #expect(try places.run(on: source, ["-s", service, "get", "b"]).status == 1)

        let whole = try places.run(
            on: source, ["-s", service, "mv", "--service-to", service, "--force"] + places.options(target))
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(try places.run(on: source, ["-s", service, "list"]).stdoutText.isEmpty)
        #expect(try places.run(on: target, ["-s", service, "get", "a"]).stdoutText == entry)
        for backend in [source, target] {
            for name in [service, "moved"] { _ = try places.run(on: backend, ["-s", name, "reset", "--yes"]) }
        }
    }

    /// A Secret Service item another tool stored, with a label and an attribute of its own, goes
    /// to a vault and back under another key: the label and the attribute are still there.
    @Test(arguments: [CLIBackend.vault, .treeVault, .openbao])
    func aSecretServiceItemsLabelAndAttributesSurviveARoundTrip(through middle: CLIBackend) throws {
        let places = try Places()
        let service = uniqueService()
        let environment = cliEnvironment()
        let stored = try runProcess(
            "/usr/bin/secret-tool",
            ["store", "--label=My deploy token", "service", service, "username", "k", "extra", "yes"],
            stdin: Data("deploy-secret".utf8), environment: environment)
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(
            try places.run(on: .secretService, ["-s", service, "mv", "k", "k"] + places.options(middle)).status == 0)
        let back = try places.run(on: middle, ["-s", service, "mv", "k", "k2"] + places.options(.secretService))
        #expect(back.status == 0, "\(back.stderr)")
        let found = try runProcess(
            "/usr/bin/secret-tool", ["search", "--all", "service", service, "username", "k2"], environment: environment)
        let text = found.stdoutText + found.stderr
        #expect(text.contains("label = My deploy token"), "\(text)")
        #expect(text.contains("attribute.extra = yes"), "\(text)")
        #expect(text.contains("secret = deploy-secret"), "\(text)")
        #expect(try places.run(on: .secretService, ["-s", service, "list"]).stdoutText == "k2\n")
        _ = try places.run(on: .secretService, ["-s", service, "reset", "--yes"])
    }
}

extension CLIBackend {
    /// The name --backend gives this backend.
    var name: String {
        switch self {
        case .secretService: "secret-service"
        case .vault, .treeVault: "vault"
        case .openbao: "openbao"
        }
    }
}
