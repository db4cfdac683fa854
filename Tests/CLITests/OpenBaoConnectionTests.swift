import Foundation
import TestSupport
import Testing

/// The openbao backend's connections to real `bao` servers: plain http only to loopback, servers
/// that refuse, never answer or do not exist, TLS with a private CA, a sealed server, namespaces.
@Suite("OpenBao connections")
struct OpenBaoConnectionTests {
    @Test func plainHTTPOnlyToLoopbackAndUnreachableServers() throws {
        try CLIBackend.withOpenBaoMount { _, _ throws in
            let remote = try cli(["-s", "ci", "get", "k"], extra: ["BAO_ADDR": "http://bao.example.com:8200"])
            #expect(remote.status == 64)
            #expect(remote.stderr.contains("Use https://"))
            let port = try freePort()
            let refused = try cli(["-s", "ci", "get", "k"], extra: ["BAO_ADDR": "http://127.0.0.1:\(port)"])
            #expect(refused.status == 69)
            #expect(refused.stderr.contains("cannot reach OpenBao"))
            let noHost = try cli(["-s", "ci", "get", "k"], extra: ["BAO_ADDR": "https://no-such-host.invalid:8200"])
            #expect(noHost.status == 69)
            // A password in the address's user part, or a token in a query, is never repeated.
            let withPassword = try cli(
                ["-s", "ci", "get", "k"], extra: ["BAO_ADDR": "http://admin:hunter2secret@127.0.0.1:\(port)"])
            #expect(withPassword.status == 69)
            #expect(withPassword.stderr.contains("http://admin:xxxxx@127.0.0.1:\(port)"))
            let withQuery = try cli(
                ["-s", "ci", "get", "k"], extra: ["BAO_ADDR": "https://127.0.0.1:8200/?token=hunter2secret"])
            #expect(withQuery.status == 64)
            #expect(withQuery.stderr.contains("has a query or fragment"))
            for result in [withPassword, withQuery] { #expect(!result.stderr.contains("hunter2secret")) }
        }
    }

    @Test func aServerThatNeverAnswersTimesOutWith75() throws {
        // A listening socket nobody accepts from: the connection opens, no answer ever comes.
        let listener = try LoopbackSocket()
        try listener.listen()
        let port = listener.port
        try CLIBackend.withOpenBaoMount { _, _ throws in
            // (Not hanging: a process timeout of 10 times the limit throws ProcessTimedOut.)
            let silent = try cli(
                ["--timeout", "1", "-s", "ci", "get", "k"], extra: ["BAO_ADDR": "http://127.0.0.1:\(port)"],
                timeout: 10)
            #expect(silent.status == 75, "\(silent.stderr)")
            #expect(silent.stderr.contains("within 1 s") && silent.stderr.contains("raise --timeout"))
            // doctor takes its limit from $KEYCHAIN_TIMEOUT as every command does (below the
            // default 5 s): it says which limit it waited for.
            let doctor = try cli(
                ["-s", "ci", "doctor"], extra: ["BAO_ADDR": "http://127.0.0.1:\(port)", "KEYCHAIN_TIMEOUT": "1"],
                timeout: 10)
            #expect(doctor.status == 75, "\(doctor.stdoutText)")
            #expect(doctor.stdoutText.contains("did not answer within 1 s"), "\(doctor.stdoutText)")
        }
        withExtendedLifetime(listener) {}
    }

    @Test func tlsWithAPrivateCAAndASealedServer() throws {
        let tls = try OpenBaoServer.dev(tls: true)
        defer { tls.stop() }
        let environment: [String: String] = [
            "KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": tls.address, "BAO_TOKEN": "root",
            "PATH": "/usr/bin:/bin", "HOME": tls.directory.url.path,
        ]
        let untrusted = try runProcess(keychainCLIPath, ["-s", "ci", "get", "k"], environment: environment)
        #expect(untrusted.status == 69)
        #expect(untrusted.stderr.contains("BAO_CACERT"))
        var trusted = environment
        trusted["BAO_CACERT"] = tls.caFile
        let set = try runProcess(
            keychainCLIPath, ["-s", "ci", "set", "k"], stdin: Data("v".utf8), environment: trusted)
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try runProcess(keychainCLIPath, ["-s", "ci", "get", "k"], environment: trusted).stdoutText == "v")
        let doctor = try runProcess(keychainCLIPath, ["-s", "ci", "doctor"], environment: trusted)
        #expect(doctor.status == 0)
        #expect(doctor.stdoutText.contains("over verified TLS"))
        // BAO_CAPATH: a directory of CA certificates, hashed as OpenSSL looks them up.
        let certificates = try ScratchDirectory("capath")
        defer { certificates.remove() }
        try FileManager.default.copyItem(atPath: tls.caFile, toPath: certificates.path("ca.pem"))
        _ = try runProcess(
            "/usr/bin/openssl", ["rehash", certificates.url.path], environment: ["PATH": "/usr/bin:/bin"])
        var byPath = environment
        byPath["BAO_CAPATH"] = certificates.url.path
        #expect(try runProcess(keychainCLIPath, ["-s", "ci", "get", "k"], environment: byPath).stdoutText == "v")
        // Sealed: 69 and what to do, for commands and doctor alike.
        #expect(try tls.bao(["operator", "seal"]).status == 0)
        let sealed = try runProcess(keychainCLIPath, ["-s", "ci", "get", "k"], environment: trusted)
        #expect(sealed.status == 69)
        #expect(sealed.stderr.contains("sealed: unseal it"))
        let sealedDoctor = try runProcess(keychainCLIPath, ["-s", "ci", "doctor"], environment: trusted)
        #expect(sealedDoctor.status == 69)
        #expect(sealedDoctor.stdoutText.contains("✗ server"))
    }

    @Test func aNamespaceIsSentWithEveryRequest() throws {
        let server = try OpenBaoServer.shared.get()
        let namespace = "team-" + UUID().uuidString.prefix(8).lowercased()
        #expect(try server.bao(["namespace", "create", namespace]).status == 0)
        let inNamespace = ["BAO_NAMESPACE": namespace]
        #expect(try server.bao(["secrets", "enable", "-path=secret", "kv-v2"], environment: inNamespace).status == 0)
        let home = try ScratchDirectory("namespace")
        defer { home.remove() }
        var environment: [String: String] = [
            "KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": server.address, "BAO_TOKEN": server.rootToken,
            "PATH": "/usr/bin:/bin", "HOME": home.url.path, "BAO_NAMESPACE": namespace,
        ]
        let set = try runProcess(
            keychainCLIPath, ["-s", "ci", "set", "k"], stdin: Data("in-namespace".utf8), environment: environment)
        #expect(set.status == 0, "\(set.stderr)")
        let field = try server.bao(["kv", "get", "-field=k", "secret/ci"], environment: inNamespace)
        #expect(field.stdoutText == "in-namespace")
        let doctor = try runProcess(keychainCLIPath, ["-s", "ci", "doctor"], environment: environment)
        #expect(doctor.status == 0, "\(doctor.stdoutText)")
        #expect(doctor.stdoutText.contains("namespace \(namespace)"))
        // The root namespace's secret/ holds no such secret.
        environment["BAO_NAMESPACE"] = nil
        #expect(try runProcess(keychainCLIPath, ["-s", "ci", "get", "k"], environment: environment).status == 1)
    }
}
