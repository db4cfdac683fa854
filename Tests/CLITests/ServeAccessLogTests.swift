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
        // What cannot work is refused before serving: a log that is a symbolic link, a program that
        // does not exist.
        try FileManager.default.createSymbolicLink(atPath: scratch.path("link"), withDestinationPath: log)
        try CLIBackend.withVault { _ in
            let linked = try cli(["serve", "--access-log", scratch.path("link"), "--", "true"], session: nil)
            #expect(linked.status == 74 && linked.stderr.contains("access log"), "\(linked.stderr)")
            let missing = try cli(["serve", "--allow-exe", "/no/such/program", "--", "true"], session: nil)
            #expect(missing.status == 64 && missing.stderr.contains("/no/such/program"), "\(missing.stderr)")
        }
    }
}
