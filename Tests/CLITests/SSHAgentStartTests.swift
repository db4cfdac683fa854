import Foundation
import TestSupport
import Testing

/// How ssh-agent starts and ends: in the background for eval, with csh lines, on a given socket,
/// as a plain user; what ssh-add adds stored by --store; and its errors, each with its exit code.
@Suite("ssh-agent: starting, ending, --store, errors", .keyringSession)
struct SSHAgentStartTests {
    let keys = try! SSHAgentTests()

    /// eval "$(keychain-cli ssh-agent …)": the agent runs on after the command, serves its keys,
    /// and SIGTERM ends it, its socket and directory removed.
    @Test(arguments: [CLIBackend.vault, .secretService])
    func theBackgroundAgentServesUntilSIGTERM(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let key = try keys.storedKey(s, "k", passphrase: "pp")
            var environment = cliEnvironment()
            environment["K"] = keychainCLIPath
            environment["S"] = s
            environment["KEYCHAIN_KEY_PASSPHRASE"] = "pp"
            let script = """
                eval "$("$K" -s "$S" ssh-agent --key k)" > /dev/null || exit 1
                ssh-add -L | cut -d' ' -f1,2
                kill $SSH_AGENT_PID
                i=0; while [ -e "$(dirname "$SSH_AUTH_SOCK")" ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                [ -e "$SSH_AUTH_SOCK" ] && echo "socket left"; [ -e "$(dirname "$SSH_AUTH_SOCK")" ] && echo "directory left"
                # (Gone or a zombie: the agent is init's child, which a container's init may not reap.)
                alive() { state=$(cut -d' ' -f3 /proc/$1/stat 2>/dev/null); [ -n "$state" ] && [ "$state" != Z ]; }
                i=0; while alive $SSH_AGENT_PID && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                alive $SSH_AGENT_PID && echo "agent left"
                echo done
                """
            let result = try runProcess("/bin/sh", ["-c", script], environment: environment, timeout: 60)
            #expect(
                result.stdoutText == key.split(separator: " ").prefix(2).joined(separator: " ") + "\ndone\n",
                "\(result.stderr)")
        }
    }

    /// -c prints csh lines; -a puts the socket where it says, and an existing path is 73.
    @Test func cshLinesAndAGivenSocket() throws {
        try CLIBackend.withVault { _ in
            let socket = keys.scratch.path("given.sock")
            var environment = cliEnvironment()
            environment["K"] = keychainCLIPath
            let script = """
                out=$("$K" ssh-agent -c -a "$1") || exit 1
                printf '%s\\n' "$out" | sed 's/\\(PID\\|pid\\) [0-9][0-9]*/\\1 N/'
                pid=$(printf '%s\\n' "$out" | sed -n 's/^setenv SSH_AGENT_PID \\([0-9]*\\);$/\\1/p')
                "$K" ssh-agent -a "$1"; echo "again $?"
                kill $pid; i=0; while [ -e "$1" ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                [ -e "$1" ] && echo "socket left"; echo done
                """
            let result = try runProcess("/bin/sh", ["-c", script, "sh", socket], environment: environment, timeout: 60)
            #expect(
                result.stdoutText
                    == "setenv SSH_AUTH_SOCK '\(socket)';\nsetenv SSH_AGENT_PID N;\necho Agent pid N;\nagain 73\ndone\n",
                "\(result.stderr)")
            #expect(result.stderr.contains("exists; remove it"), "\(result.stderr)")
        }
    }

    /// --store: a key ssh-add adds is stored under its comment (another key of that name keeps
    /// it: the next name is taken); one added with a lifetime is not stored. What is stored is an
    /// OpenSSH key ssh-keygen reads, and a later agent serves it.
    @Test(arguments: [CLIBackend.vault, .secretService, .openbao])
    func sshAddStoresWithStore(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "laptop"], input: "another secret already named so")
            for name in ["first", "second", "short"] {
                let made = try runProcess(
                    "/usr/bin/ssh-keygen",
                    ["-q", "-t", "ecdsa", "-N", "", "-C", "laptop", "-f", keys.scratch.path(name)],
                    environment: [:])
                #expect(made.status == 0)
            }
            let script = """
                cd "$DIR"; ssh-add first 2>/dev/null; ssh-add first 2>/dev/null; ssh-add -t 60 short 2>/dev/null
                ssh-add -l | wc -l
                """
            let result = try keys.agentRun(["-s", s, "ssh-agent", "--store", s], script)
            #expect(result.stdoutText == "2\n", "\(result.stderr)")
            #expect(result.stderr.contains("stored the key"), "\(result.stderr)")
            #expect(try cli(["-s", s, "list"]).stdoutText == "laptop\nlaptop-2\n")
            let stored = try cli(["-s", s, "get", "laptop-2"])
            try stored.stdout.write(to: URL(fileURLWithPath: keys.scratch.path("stored")))
            chmod(keys.scratch.path("stored"), 0o600)
            let derived = try runProcess(
                "/usr/bin/ssh-keygen", ["-y", "-f", keys.scratch.path("stored")], environment: [:])
            let original = try String(contentsOfFile: keys.scratch.path("first.pub"), encoding: .utf8)
            #expect(derived.stdoutText.split(separator: " ").prefix(2) == original.split(separator: " ").prefix(2))
            let served = try keys.agentRun(["-s", s, "ssh-agent", "--key", "laptop-2"], "ssh-add -l | wc -l")
            #expect(served.stdoutText == "1\n", "\(served.stderr)")
        }
    }

    /// Each mistake has its exit code and a message that says what to do, never a key's bytes.
    @Test func mistakesHaveTheirExitCodes() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try keys.storedKey(s, "locked", passphrase: "right")
            _ = try cli(["-s", s, "set", "token"], input: "not-a-key-TOKEN-1234")
            let cases: [([String], [String: String], Int32, String)] = [
                (["--key", "nothing"], [:], 1, "no such secret"),
                (["--key", "token"], [:], 65, "is not an OpenSSH private key"),
                (["--from", uniqueService()], [:], 1, "holds no OpenSSH private key"),
                (["--key", "locked"], [:], 77, "--key-passphrase-fd"),
                (["--key", "locked"], ["KEYCHAIN_KEY_PASSPHRASE": "wrong"], 77, "does not open the key"),
                (["--ttl", "0s"], [:], 64, "--ttl must be"),
                (["-D", "--key", "locked"], [:], 64, "not both"),
            ]
            for (arguments, extra, status, message) in cases {
                let result = try cli(
                    ["-s", s, "ssh-agent"] + arguments + (arguments.first == "-D" ? ["--", "true"] : ["--", "true"]),
                    extra: extra)
                #expect(result.status == status, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains("TOKEN-1234"))
            }
        }
    }

    /// As a plain user (nobody): the agent is left out of core dumps and serves its keys.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func aPlainUsersAgentIsUndumpable() throws {
        let scratch = try ScratchDirectory("agent-nobody")
        defer { scratch.remove() }
        let binary = try scratch.openWithCopyOfCLI()
        let environment = [
            "HOME": scratch.url.path, "TMPDIR": scratch.url.path, "KEYCHAIN_BACKEND": "vault",
            "KEYCHAIN_VAULT": scratch.path("v.age"), "KEYCHAIN_PASSPHRASE": "x", "KEYCHAIN_VAULT_WORK_FACTOR": "10",
        ]
        let script = """
            ssh-keygen -q -t ed25519 -N '' -f "$HOME/id" && "$0" set id < "$HOME/id" && rm "$HOME/id"
            "$0" ssh-agent --key id -- sh -c 'cat /proc/$SSH_AGENT_PID/coredump_filter; ssh-add -l | wc -l'
            """
        let result = try runAsNobody(["sh", "-c", script, binary], environment: environment)
        #expect(result.stdoutText == "00000000\n1\n", "\(result.stderr)")
    }
}
