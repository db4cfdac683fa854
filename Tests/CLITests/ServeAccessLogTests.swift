import Foundation
import TestSupport
import Testing

/// `serve --access-log FILE` and `--allow-exe PATH`: the real secret-tool and python keyring
/// through serve, each of their reads, writes and deletes a JSON line naming the program, never
/// the secret; a program outside the allow list refused its reads.
@Suite("serve: the access log and the allow list")
struct ServeAccessLogTests {
    static let script = """
        printf 'log-secret-1' | secret-tool store --label=n service logged username bot
        secret-tool lookup service logged username bot; echo
        python3 -c 'import keyring; print(keyring.get_password("logged", "bot"))'
        secret-tool clear service logged username bot
        """

    /// Each line of the log at `path`, as a JSON object.
    func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test func everyAccessIsALineNamingTheProgramAndNoSecret() throws {
        let scratch = try ScratchDirectory("access-log")
        defer { scratch.remove() }
        let log = scratch.path("access.log")
        try CLIBackend.withVault { _ in
            let served = try cli(
                ["serve", "--no-mask", "--access-log", log, "--", "sh", "-c", Self.script], session: nil)
            #expect(served.status == 0, "\(served.stderr)")
            #expect(served.stdoutText == "log-secret-1\nlog-secret-1\n", "\(served.stderr)")
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!text.contains("log-secret"))
            let entries = try lines(log)
            #expect(entries.map { $0["operation"] as? String } == ["write", "read", "read", "delete"], "\(text)")
            #expect(entries.allSatisfy { $0["service"] as? String == "logged" && $0["key"] as? String == "bot" })
            #expect(entries.allSatisfy { $0["uid"] as? Int == Int(getuid()) && ($0["pid"] as? Int ?? 0) > 0 })
            #expect(entries.allSatisfy { $0["allowed"] as? Bool == true && $0["time"] is String })
            let programs = entries.map { ($0["executable"] as? String ?? "").split(separator: "/").last ?? "" }
            #expect(programs[0] == "secret-tool" && programs[1] == "secret-tool" && programs[3] == "secret-tool")
            #expect(programs[2].hasPrefix("python3"), "\(programs)")
            var status = stat()
            #expect(stat(log, &status) == 0 && status.st_mode & 0o777 == 0o600)
        }
    }

    /// git's own libsecret helper (built from the source git ships) through serve: its store and
    /// get are a write and a read naming it; with only it allowed, it still gets its credential.
    @Test func gitsLibsecretHelperIsNamedAndMayBeTheOnlyReader() throws {
        let helper = try libsecretGitHelper.get()
        let scratch = try ScratchDirectory("access-log-git")
        defer { scratch.remove() }
        let log = scratch.path("access.log")
        let script = """
            printf 'protocol=https\nhost=example.com\nusername=bob\npassword=git-secret-1\n\n' | "$GCL" store
            printf 'protocol=https\nhost=example.com\n\n' | "$GCL" get
            """
        try CLIBackend.withVault { _ in
            let served = try cli(
                ["serve", "--no-mask", "--access-log", log, "--allow-exe", helper, "--", "sh", "-c", script],
                session: nil, extra: ["GCL": helper])
            #expect(served.status == 0, "\(served.stderr)")
            #expect(served.stdoutText.contains("password=git-secret-1\n"), "\(served.stdoutText)")
            let entries = try lines(log)
            #expect(entries.map { $0["operation"] as? String } == ["write", "read"])
            #expect(
                entries.allSatisfy { ($0["executable"] as? String)?.hasSuffix("/git-credential-libsecret") == true })
            #expect(try !String(contentsOfFile: log, encoding: .utf8).contains("git-secret"))
        }
    }

    @Test func aProgramOutsideTheAllowListCannotRead() throws {
        let scratch = try ScratchDirectory("allow-exe")
        defer { scratch.remove() }
        let log = scratch.path("access.log")
        try CLIBackend.withVault { _ in
            let served = try cli(
                [
                    "serve", "--no-mask", "--access-log", log, "--allow-exe", "/usr/bin/secret-tool", "--", "sh", "-c",
                    Self.script,
                ], session: nil)
            #expect(served.status == 0, "\(served.stderr)")
            // secret-tool reads; python keyring is refused (its get fails), nothing of the secret shown.
            #expect(served.stdoutText.hasPrefix("log-secret-1\n"), "\(served.stdoutText)")
            #expect(served.stdoutText.components(separatedBy: "log-secret-1").count == 2, "\(served.stdoutText)")
            let refused = try lines(log).filter { $0["allowed"] as? Bool == false }
            #expect(refused.count == 1 && refused.first?["operation"] as? String == "read")
            let refusedProgram = refused.first?["executable"] as? String ?? ""
            #expect(refusedProgram.contains("python3"), "\(refusedProgram)")
        }
        // What cannot work is refused before serving: a log that is a symbolic link or a FIFO (no
        // reader: never waited on), a program that does not exist. The message is the log's, not
        // the vault's hint.
        try FileManager.default.createSymbolicLink(atPath: scratch.path("link"), withDestinationPath: log)
        #expect(mkfifo(scratch.path("fifo"), 0o600) == 0)
        try CLIBackend.withVault { _ in
            let linked = try cli(["serve", "--access-log", scratch.path("link"), "--", "true"], session: nil)
            #expect(linked.status == 74 && linked.stderr.contains("access log"), "\(linked.stderr)")
            #expect(!linked.stderr.contains("--vault"), "\(linked.stderr)")
            let fifo = try cli(
                ["serve", "--access-log", scratch.path("fifo"), "--", "true"], session: nil, timeout: 20)
            #expect(fifo.status == 74, "\(fifo.stderr)")
            let missing = try cli(["serve", "--allow-exe", "/no/such/program", "--", "true"], session: nil)
            #expect(missing.status == 64 && missing.stderr.contains("/no/such/program"), "\(missing.stderr)")
        }
    }

    /// A label or attribute change is a write, and a refused GetSecrets logs every item it asked
    /// for (jeepney, a plain session: what any client can send).
    @Test func propertyWritesAndEveryItemOfARefusedGetSecretsAreLogged() throws {
        let scratch = try ScratchDirectory("access-log-calls")
        defer { scratch.remove() }
        let log = scratch.path("access.log")
        let client = """
            from jeepney import DBusAddress, new_method_call
            from jeepney.io.blocking import open_dbus_connection
            conn = open_dbus_connection("SESSION")
            def call(path, interface, method, signature=None, body=()):
                return conn.send_and_get_reply(new_method_call(
                    DBusAddress(path, "org.freedesktop.secrets", interface), method, signature, body))
            service = "/org/freedesktop/secrets"
            paths = call(service, "org.freedesktop.Secret.Service", "SearchItems", "a{ss}", ({"service": "multi"},)).body[0]
            session = call(service, "org.freedesktop.Secret.Service", "OpenSession", "sv", ("plain", ("s", ""))).body[1]
            print(call(service, "org.freedesktop.Secret.Service", "GetSecrets", "aoo", (paths, session)).header.message_type.name)
            properties = "org.freedesktop.DBus.Properties"
            call(paths[0], properties, "Set", "ssv", ("org.freedesktop.Secret.Item", "Label", ("s", "new label")))
            """
        try Data(client.utf8).write(to: URL(fileURLWithPath: scratch.path("client.py")))
        let script = """
            for i in 1 2; do printf s$i | secret-tool store --label=x service multi username u$i; done
            /usr/bin/python3 \(scratch.path("client.py"))
            """
        try CLIBackend.withVault { _ in
            let served = try cli(
                [
                    "serve", "--no-mask", "--access-log", log, "--allow-exe", "/usr/bin/secret-tool", "--", "sh", "-c",
                    script,
                ], session: nil)
            #expect(served.status == 0 && served.stdoutText == "error\n", "\(served.stdoutText) \(served.stderr)")
            let entries = try lines(log)
            let refused = entries.filter { $0["allowed"] as? Bool == false }
            #expect(Set(refused.compactMap { $0["key"] as? String }) == ["u1", "u2"], "\(entries)")
            #expect(entries.last?["operation"] as? String == "write" && entries.count == 5, "\(entries)")
        }
    }

    /// A log that cannot be written (its file size limit reached, as a full disk would) stores
    /// nothing unlogged: the request is refused, and so is every later one.
    @Test func aLogThatCannotBeWrittenRefusesEveryRequest() throws {
        let scratch = try ScratchDirectory("access-log-full")
        defer { scratch.remove() }
        let log = scratch.path("access.log")
        try Data(repeating: UInt8(ascii: "x"), count: 4096).write(to: URL(fileURLWithPath: log))
        // serve under RLIMIT_FSIZE 4096 with SIGXFSZ ignored: each write to the log fails (EFBIG).
        let limited = """
            import os, resource, signal, sys
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
            os.execv(sys.argv[1], sys.argv[1:])
            """
        let script = """
            printf 'full-disk-secret' | secret-tool store --label=x service full username u; echo "store $?"
            secret-tool lookup service full username u; echo "lookup $?"
            """
        try CLIBackend.withVault { _ in
            let served = try runProcess(
                "/usr/bin/python3",
                ["-c", limited, keychainCLIPath, "serve", "--no-mask", "--access-log", log, "--", "sh", "-c", script],
                environment: cliEnvironment(session: nil))
            #expect(served.stdoutText == "store 1\nlookup 1\n", "\(served.stdoutText) \(served.stderr)")
            #expect(served.stderr.contains("cannot write its access log"), "\(served.stderr)")
            #expect(try cli(["-s", "full", "list"]).stdoutText == "")
            #expect(try Data(contentsOf: URL(fileURLWithPath: log)).count == 4096)
        }
    }
}
