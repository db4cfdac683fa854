import Foundation
import TestSupport
import Testing

/// ssh-agent's limits and protections: lock, lifetimes, another uid, hostile clients, memory
/// after a lock, the access log and --allow-exe, the background agent and --store.
@Suite("ssh-agent: locks, limits, hostile clients, the access log", .keyringSession)
struct SSHAgentHardeningTests {
    let keys = try! SSHAgentTests()

    /// $SSH_ASKPASS that answers `password` (ssh-add -x and -X ask through it without a terminal).
    func askpass(_ password: String) throws -> [String: String] {
        let path = keys.scratch.path("askpass-\(UUID())")
        try "#!/bin/sh\nprintf '%s\\n' '\(password)'\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o700)
        return ["SSH_ASKPASS": path, "SSH_ASKPASS_REQUIRE": "force", "DISPLAY": ":0"]
    }

    /// Locked, the agent lists and signs nothing, and refuses a wrong password; unlocked, all is
    /// back. A key added with -t is gone once its lifetime ends.
    @Test func lockAndLifetimes() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let key = try keys.storedKey(s, "k")
            try key.write(toFile: keys.scratch.path("k.pub"), atomically: true, encoding: .utf8)
            _ = try runProcess(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keys.scratch.path("short")],
                environment: [:])
            let right = try askpass("the lock")
            let wrong = try askpass("not the lock")
            let script = """
                cd "$DIR"; echo m > m
                SSH_ASKPASS=$RIGHT ssh-add -x 2>&1
                ssh-add -l; echo "listed $?"
                ssh-keygen -Y sign -f k.pub -n file m > /dev/null 2>&1; echo "signed $?"
                SSH_ASKPASS=$WRONG ssh-add -X 2>&1
                SSH_ASKPASS=$RIGHT ssh-add -X 2>&1
                ssh-add -l | wc -l
                ssh-add -t 1 short 2>/dev/null; ssh-add -l | wc -l
                i=0; while [ "$(ssh-add -l | wc -l)" != 1 ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                ssh-add -l | wc -l
                """
            let result = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k"], script,
                extra: right.merging(["RIGHT": right["SSH_ASKPASS"]!, "WRONG": wrong["SSH_ASKPASS"]!]) { $1 })
            #expect(
                result.stdoutText
                    == "Agent locked.\nThe agent has no identities.\nlisted 1\nsigned 255\n"
                    + "Failed to unlock agent: agent refused operation\nAgent unlocked.\n1\n2\n1\n",
                "\(result.stderr)")
        }
    }

    /// --idle: every key goes once none signed for that long; a key added later is held afresh,
    /// and the agent, holding nothing, waits without using the CPU (its timer not re-armed in
    /// the past: less than 0.3 s of CPU over a second).
    @Test func idleForgetsAndThenRestsQuietly() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try keys.storedKey(s, "k")
            _ = try runProcess(
                "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keys.scratch.path("later")],
                environment: [:])
            let script = """
                ssh-add -l | wc -l
                i=0; while ssh-add -l > /dev/null && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                ssh-add -l; echo "listed $?"
                ticks() { awk '{print $14 + $15}' /proc/$SSH_AGENT_PID/stat; }
                before=$(ticks); sleep 1; after=$(ticks)  # (a window to measure, not a wait)
                [ $((after - before)) -lt 30 ] && echo quiet
                ssh-add "$DIR/later" 2>/dev/null; ssh-add -l | wc -l
                """
            let result = try keys.agentRun(["-s", s, "ssh-agent", "--key", "k", "--idle", "1s"], script)
            #expect(
                result.stdoutText == "1\nThe agent has no identities.\nlisted 1\nquiet\n1\n", "\(result.stderr)")
        }
    }

    /// ssh-add -c: each use asks $SSH_ASKPASS (SSH_ASKPASS_PROMPT=confirm, the key's comment in the
    /// question); its yes signs, its no is refused. --ttl forgets a loaded key, and no file of
    /// HOME, TMPDIR or XDG_RUNTIME_DIR holds the key afterwards.
    @Test func confirmationTTLAndNoKeyLeftInFiles() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let places = ["home", "tmp", "run"].map { keys.scratch.path($0) }
            for place in places {
                try FileManager.default.createDirectory(atPath: place, withIntermediateDirectories: true)
            }
            chmod(places[2], 0o700)
            let key = try keys.storedKey(s, "k")
            try key.write(toFile: keys.scratch.path("k.pub"), atomically: true, encoding: .utf8)
            let made = try runProcess(
                "/usr/bin/ssh-keygen",
                ["-q", "-t", "ed25519", "-N", "", "-C", "confirm-me", "-f", keys.scratch.path("c")],
                environment: [:])
            #expect(made.status == 0)
            let answer = keys.scratch.path("answer")
            let askpass = keys.scratch.path("askpass")
            try """
            #!/bin/sh
            printf '%s|%s\n' "$SSH_ASKPASS_PROMPT" "$1" >> "\(answer).asked"
            if [ "$(cat "\(answer)")" = wait ]; then
                touch "\(answer).waiting"
                while [ ! -e "\(answer).go" ]; do sleep 0.05; done
                exit 0
            fi
            exit "$(cat "\(answer)")"
            """.write(toFile: askpass, atomically: true, encoding: .utf8)
            chmod(askpass, 0o700)
            let script = """
                cd "$DIR"; echo m > m
                ssh-add -c c 2>/dev/null
                echo 0 > answer; ssh-add -T c.pub 2>/dev/null && echo "allowed"
                echo 1 > answer; ssh-add -T c.pub 2>/dev/null || echo "refused"
                # Removed while its confirmation is asked: a yes then signs nothing.
                echo wait > answer; (ssh-add -T c.pub 2>/dev/null && echo "signed after removal") &
                i=0; while [ ! -e answer.waiting ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                ssh-add -d c.pub 2>/dev/null; touch answer.go; wait
                i=0; while ssh-add -L | grep -q k@test && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done
                ssh-add -L | grep -c k@test
                """
            let result = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k", "--ttl", "2s"], script,
                extra: [
                    "SSH_ASKPASS": askpass, "HOME": places[0], "TMPDIR": places[1], "XDG_RUNTIME_DIR": places[2],
                ])
            #expect(result.stdoutText == "allowed\nrefused\n0\n", "\(result.stderr)")
            let asked = try String(contentsOfFile: "\(answer).asked", encoding: .utf8)
            #expect(asked.hasPrefix("confirm|Allow use of key confirm-me?\nKey fingerprint SHA256:"), "\(asked)")
            // The stored key's seed, and its file's base64, are in no file of those places.
            let stored = try cli(["-s", s, "get", "k"]).stdoutText
            let line = try #require(stored.split(separator: "\n").dropFirst(2).first)
            for place in places {
                let files = FileManager.default.enumerator(atPath: place)?.compactMap { $0 as? String } ?? []
                for file in files {
                    let bytes = (try? Data(contentsOf: URL(fileURLWithPath: "\(place)/\(file)"))) ?? Data()
                    #expect(bytes.range(of: Data(line.utf8)) == nil, "\(place)/\(file)")
                }
            }
        }
    }

    /// Another uid that can reach the socket is refused (SO_PEERCRED), the owner still answered.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func anotherUserIsRefused() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try keys.storedKey(s, "k")
            let open = keys.scratch.path("open")
            try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
            chmod(open, 0o755)
            chmod(keys.scratch.url.path, 0o755)
            // nobody reaches the socket (connect succeeds) and is closed on without an answer.
            let client = """
                import os, socket, struct
                s = socket.socket(socket.AF_UNIX)
                s.connect(os.environ["SSH_AUTH_SOCK"])
                print("connected")
                try:
                    s.sendall(struct.pack(">I", 1) + b"\\x0b")
                    print("answer", s.recv(100))
                except OSError:
                    print("answer b''")
                """
            let script = """
                chmod 666 "$SSH_AUTH_SOCK"
                setpriv --reuid nobody --regid nogroup --clear-groups /usr/bin/python3 -c "$CLIENT"
                ssh-add -l > /dev/null; echo "owner $?"
                """
            let result = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k", "-a", "\(open)/agent.sock"], script, extra: ["CLIENT": client])
            #expect(result.stdoutText == "connected\nanswer b''\nowner 0\n", "\(result.stderr)")
            // The agent removes its socket when SIGTERM reaches it, after the command has ended.
            #expect(eventually(timeout: 10) { !FileManager.default.fileExists(atPath: "\(open)/agent.sock") })
        }
    }

    /// 100 clients holding half a request, a truncated one, an oversized one (closed), malformed
    /// and unknown requests (SSH_AGENT_FAILURE, the connection kept): the agent answers on.
    @Test func hostileClientsDoNotStopIt() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try keys.storedKey(s, "k")
            let probe = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../clients/agent_probe.py").standardized.path
            let result = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k"], #"python3 "$PROBE" hostile"#, extra: ["PROBE": probe])
            #expect(
                result.stdoutText
                    == "oversized closed\nmalformed 05\nunknown 05\nempty 05\n"
                    + "same connection lists 1\nstill answers 1 keys\n",
                "\(result.stderr)")
            // 20,000 requests in one write are answered one by one (they overflowed the stack of
            // an agent that recursed once per request), and a client that never reads is not
            // read from while the others are answered.
            let piped = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k"], #"python3 "$PROBE" pipelined"#, extra: ["PROBE": probe])
            #expect(piped.stdoutText == "answers 20000\nstill answers 1 keys\n", "\(piped.stderr)")
        }
    }

    /// Root reads the agent's memory (/proc/PID/mem): the key's private seed is there while it
    /// serves (the search can succeed), and nowhere once it is locked, nor is the lock's password.
    /// Its core dump filter is 0.
    @Test(.enabled(if: geteuid() == 0, "reading another process's memory needs root"))
    func aLockedAgentHoldsNoKeyInMemory() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let file = keys.scratch.path("seeded")
            _ = try runProcess("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file], environment: [:])
            let seed = try Self.ed25519Seed(ofKeyFile: file)
            // A line of the key file's base64, as the backend holds it: the key too.
            let fileLine = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")[2]
            let lineHex = Array(fileLine.utf8).map { String(format: "%02x", $0) }.joined()
            let password = "lock-password-\(UUID())"
            let passwordHex = Array(password.utf8).map { String(format: "%02x", $0) }.joined()
            _ = try cli(["-s", s, "set", "k"], stdin: try Data(contentsOf: URL(fileURLWithPath: file)))
            try FileManager.default.removeItem(atPath: file)
            let probe = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../clients/agent_probe.py").standardized.path
            try (try String(contentsOfFile: file + ".pub", encoding: .utf8)).write(
                toFile: keys.scratch.path("seeded.pub"), atomically: true, encoding: .utf8)
            // It signs first (ssh-add -T), then is locked, then unlocked: it signs again.
            let script = """
                ssh-add -T "$DIR/seeded.pub" && python3 "$PROBE" memory $SSH_AGENT_PID $SEED
                ssh-add -x > /dev/null 2>&1
                python3 "$PROBE" memory $SSH_AGENT_PID $SEED
                python3 "$PROBE" memory $SSH_AGENT_PID $PASSWORD
                python3 "$PROBE" memory $SSH_AGENT_PID $LINE
                cat /proc/$SSH_AGENT_PID/coredump_filter
                ssh-add -X > /dev/null 2>&1 && ssh-add -T "$DIR/seeded.pub" && echo "signs again"
                """
            let result = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k"], script,
                extra: try askpass(password).merging([
                    "PROBE": probe, "SEED": seed, "PASSWORD": passwordHex, "LINE": lineHex,
                ]) { $1 })
            // Nor does the lock's password, nor the key file's text (the backend's copy is gone).
            #expect(result.stdoutText == "found\nabsent\nabsent\nabsent\n00000000\nsigns again\n", "\(result.stderr)")
        }
    }

    /// The 32-byte seed of an unencrypted OpenSSH ed25519 key file, in hexadecimal.
    static func ed25519Seed(ofKeyFile path: String) throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let bytes = [UInt8](try #require(Data(base64Encoded: body)))
        // The private section ends with: string pub(32), string seed||pub(64), string comment, padding.
        var offset = 0
        func uint32() -> Int {
            defer { offset += 4 }
            return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        }
        func string() -> ArraySlice<UInt8> {
            let count = uint32()
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        offset = "openssh-key-v1\0".utf8.count
        for _ in 0..<3 { _ = string() }  // cipher, kdf, kdf options
        _ = uint32()
        _ = string()  // the public key
        let privateBytes = Array(string())
        var reader = 8  // two check integers
        func field() -> ArraySlice<UInt8> {
            let count = privateBytes[reader..<reader + 4].reduce(0) { $0 << 8 | Int($1) }
            defer { reader += 4 + count }
            return privateBytes[reader + 4..<reader + 4 + count]
        }
        _ = field()  // type
        _ = field()  // public
        let both = field()
        return both.prefix(32).map { String(format: "%02x", $0) }.joined()
    }

    /// --access-log: one line per signature, naming the key, ssh as the program and the host it
    /// is bound to (session-bind); --allow-exe without ssh refuses it, and logs that.
    @Test func theAccessLogNamesTheHostAndTheProgram() throws {
        let server = try SSHServer.shared.get()
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let key = try keys.storedKey(s, "k")
            try server.authorize(key)
            let log = keys.scratch.path("access-\(UUID()).log")
            let allowed = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k", "--access-log", log], #"eval "ssh $SSH""#)
            #expect(allowed.stdoutText == "logged-in as \(NSUserName())\n", "\(allowed.stderr)")
            let refused = try keys.agentRun(
                ["-s", s, "ssh-agent", "--key", "k", "--access-log", log, "--allow-exe", "/usr/bin/ssh-keygen"],
                #"eval "ssh $SSH" 2>/dev/null; echo "ssh $?""#)
            #expect(refused.stdoutText == "ssh 255\n", "\(refused.stderr)")
            let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(lines.count == 2)
            let hostPrint = try keys.fingerprint(server.hostKey)
            for (line, ok) in zip(lines, [true, false]) {
                #expect(line["key"] as? String == (try keys.fingerprint(key)))
                #expect(line["comment"] as? String == "k@test")
                #expect(line["allowed"] as? Bool == ok)
                #expect(line["executable"] as? String == "/usr/bin/ssh")
                #expect(line["hosts"] as? [String] == [hostPrint])
                #expect(line["forwarded"] as? Bool == false)
            }
            #expect(lines[1]["refused"] as? String == "the program is not one --allow-exe names")
            var info = stat()
            #expect(stat(log, &info) == 0 && info.st_mode & 0o777 == 0o600)
        }
    }
}
