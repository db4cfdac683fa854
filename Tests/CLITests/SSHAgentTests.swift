import Foundation
import TestSupport
import Testing

/// `keychain-cli ssh-agent` with the real OpenSSH: a real sshd on loopback logs in with a key that
/// exists only in the backend; ssh-add, ssh-keygen -Y and git sign through the agent.
@Suite("ssh-agent: OpenSSH's clients, every backend", .keyringSession)
final class SSHAgentTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("ssh-agent") }

    // The keys made for a test go with it.
    deinit { scratch.remove() }

    /// A new key by ssh-keygen, stored under `service`/`name` and its private file removed:
    /// the public key's line.
    func storedKey(_ service: String, _ name: String, type: String = "ed25519", passphrase: String = "")
        throws -> String
    {
        let file = scratch.path("\(service)-\(name)")
        let made = try runProcess(
            "/usr/bin/ssh-keygen", ["-q", "-t", type, "-N", passphrase, "-C", "\(name)@test", "-f", file],
            environment: [:])
        #expect(made.status == 0, "\(made.stderr)")
        let stored = try cli(["-s", service, "set", name], stdin: try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(stored.status == 0, "\(stored.stderr)")
        try FileManager.default.removeItem(atPath: file)
        return try String(contentsOfFile: file + ".pub", encoding: .utf8).trimmingCharacters(in: .newlines)
    }

    /// `sh -c script` run by `ssh-agent ARGUMENTS -- …`, with S (the service), SSH (ssh's
    /// arguments to log in, as words), DIR and a HOME of the scratch directory.
    func agentRun(_ arguments: [String], _ script: String, extra: [String: String] = [:]) throws -> ProcessResult {
        let server = try SSHServer.shared.get()
        let ssh = server.sshArguments("echo logged-in as $(id -un)").map { "'\($0)'" }.joined(separator: " ")
        return try cli(
            arguments + ["--", "sh", "-c", script], extra: ["SSH": ssh, "DIR": scratch.url.path].merging(extra) { $1 })
    }

    @Test(arguments: CLIBackend.allCases)
    func aKeyOnlyInTheBackendLogsIn(on backend: CLIBackend) throws {
        let server = try SSHServer.shared.get()
        try backend.run {
            let s = uniqueService()
            try server.authorize(try storedKey(s, "login"))
            let result = try agentRun(["-s", s, "ssh-agent", "--key", "login"], #"eval "ssh $SSH""#)
            #expect(result.status == 0, "\(result.stderr) \(server.log.suffix(2000))")
            #expect(result.stdoutText == "logged-in as \(NSUserName())\n")
            // Nothing of the key was left in the scratch directory or the runtime directory.
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)
            #expect(!left.contains { !$0.hasSuffix(".pub") }, "\(left)")
        }
    }

    /// ssh-add lists (-l, -L), tests (-T, OpenSSH 9.2's check that the agent signs) and removes
    /// (-d, -D) the keys of --from, an encrypted one's passphrase from $KEYCHAIN_KEY_PASSPHRASE.
    @Test func sshAddListsTestsAndRemoves() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let plain = try storedKey(s, "plain")
            let encrypted = try storedKey(s, "locked", passphrase: "key pass phrase")
            _ = try cli(["-s", s, "set", "not-a-key"], input: "a token")
            try plain.write(toFile: scratch.path("plain.pub"), atomically: true, encoding: .utf8)
            try encrypted.write(toFile: scratch.path("locked.pub"), atomically: true, encoding: .utf8)
            let script = """
                ssh-add -L | cut -d' ' -f1,2 | sort
                echo ---
                ssh-add -T "$DIR/plain.pub" "$DIR/locked.pub" && echo tested
                ssh-add -d "$DIR/plain.pub" 2>/dev/null && ssh-add -L | cut -d' ' -f1,2
                ssh-add -D 2>/dev/null && ssh-add -l; echo "listed $?"
                """
            let result = try agentRun(
                ["-s", s, "ssh-agent", "--from", s], script, extra: ["KEYCHAIN_KEY_PASSPHRASE": "key pass phrase"])
            #expect(result.status == 0, "\(result.stderr)")
            let keys = [plain, encrypted].map { $0.split(separator: " ").prefix(2).joined(separator: " ") }
            #expect(
                result.stdoutText
                    == keys.sorted().joined(separator: "\n")
                    + "\n---\ntested\n\(keys[1])\nThe agent has no identities.\nlisted 1\n",
                "\(result.stderr)")
        }
    }

    /// ssh-keygen -Y sign through the agent, verified by ssh-keygen -Y verify; git commit -S with
    /// gpg.format=ssh, verified by git verify-commit.
    @Test func sshKeygenAndGitSignThroughTheAgent() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let key = try storedKey(s, "signer")
            try key.write(toFile: scratch.path("signer.pub"), atomically: true, encoding: .utf8)
            try "dev@example.com \(key)\n".write(toFile: scratch.path("allowed"), atomically: true, encoding: .utf8)
            let script = """
                cd "$DIR" && printf 'a message\\n' > m
                ssh-keygen -Y sign -f signer.pub -n file m 2>/dev/null
                ssh-keygen -Y verify -f allowed -I dev@example.com -n file -s m.sig < m
                git init -q repo && cd repo
                git config user.name Dev; git config user.email dev@example.com
                git config gpg.format ssh; git config user.signingkey "$DIR/signer.pub"
                git config gpg.ssh.allowedSignersFile "$DIR/allowed"
                git commit -q --allow-empty -S -m signed && git verify-commit HEAD 2>&1 | head -1
                """
            let result = try agentRun(["-s", s, "ssh-agent", "--key", "signer"], script)
            let print = try fingerprint(key)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                result.stdoutText
                    == "Good \"file\" signature for dev@example.com with ED25519 key \(print)\n"
                    + "Good \"git\" signature for dev@example.com with ED25519 key \(print)\n",
                "\(result.stderr)")
        }
    }

    /// The SHA256 fingerprint of a public key line, as ssh-keygen -l prints it.
    func fingerprint(_ line: String) throws -> String {
        let file = scratch.path("fingerprint-\(UUID()).pub")
        try line.write(toFile: file, atomically: true, encoding: .utf8)
        let listed = try runProcess("/usr/bin/ssh-keygen", ["-l", "-f", file], environment: [:])
        return String(listed.stdoutText.split(separator: " ")[1])
    }

    /// ECDSA and RSA keys log in too (the server asks rsa-sha2-512 of an RSA key).
    @Test(arguments: [("ecdsa", 256), ("ecdsa", 521), ("rsa", 3072)])
    func otherKeyTypesLogIn(type: String, bits: Int) throws {
        let server = try SSHServer.shared.get()
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let file = scratch.path("\(type)-\(bits)")
            _ = try runProcess(
                "/usr/bin/ssh-keygen", ["-q", "-t", type, "-b", "\(bits)", "-N", "", "-C", "typed", "-f", file],
                environment: [:])
            _ = try cli(["-s", s, "set", "k"], stdin: try Data(contentsOf: URL(fileURLWithPath: file)))
            try FileManager.default.removeItem(atPath: file)
            try server.authorize(try String(contentsOfFile: file + ".pub", encoding: .utf8))
            let result = try agentRun(["-s", s, "ssh-agent", "--key", "k"], #"eval "ssh $SSH""#)
            #expect(result.stdoutText == "logged-in as \(NSUserName())\n", "\(result.stderr)")
        }
    }

    /// At a terminal, two keys under one passphrase ask for it once; a wrong one is asked again.
    @Test func aPassphraseIsAskedOnceAtTheTerminal() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try storedKey(s, "one", passphrase: "shared words")
            _ = try storedKey(s, "two", passphrase: "shared words")
            let run = try expect(
                """
                set timeout 30
                spawn $env(KEYCHAIN_CLI) -s \(s) ssh-agent --from \(s) -- sh -c "ssh-add -l | wc -l"
                expect "Passphrase for the key"
                send "wrong words\\r"
                expect "try again"
                expect "Passphrase for the key"
                send "shared words\\r"
                expect eof
                lassign [wait] pid spawned failed status
                exit $status
                """)
            #expect(run.status == 0, "\(run.stdoutText)")
            let text = run.stdoutText
            #expect(text.components(separatedBy: "Passphrase for the key").count == 3, "\(text)")
            #expect(text.hasSuffix("2\r\n"), "\(text)")
            #expect(!text.contains("shared words"), "the passphrase is not echoed: \(text)")
        }
    }
}
