import Foundation
import TestSupport
import Testing

/// `exec` on a terminal (a pty of its own for the command), with odd children (one that closes
/// its output early, one that never reads its input, one whose reader goes away), and `--file`:
/// secrets as files in $CREDENTIALS_DIRECTORY, gone when the command ends, even by SIGKILL.
@Suite("exec: terminals, odd children, --file", .keyringSession)
struct ExecTerminalAndFileTests {
    /// On a terminal the command sees one (isatty, its size, a change of size), colours pass,
    /// and the secret is still masked.
    @Test func onATerminalTheCommandSeesATerminalAndItsSize() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "tty-secret")
            let child = """
                import os, signal, sys
                signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
                first = os.get_terminal_size(1)
                print(os.isatty(1), os.isatty(2), first, flush=True)
                print("\\033[31m" + os.environ["V"] + "\\033[0m", flush=True)
                while os.get_terminal_size(1) == first:  # until the harness has resized the terminal
                    signal.sigtimedwait([signal.SIGWINCH], 10) or sys.exit("no SIGWINCH")
                print(os.get_terminal_size(1), flush=True)
                """
            let harness = """
                import fcntl, os, pty, signal, struct, subprocess, sys, termios, time
                signal.pthread_sigmask(signal.SIG_SETMASK, [])
                master, slave = pty.openpty()
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
                child = subprocess.Popen([os.environ["KC"], "-s", sys.argv[1], "exec", "--env", "V=k", "--",
                                          "/usr/bin/python3", "-c", sys.argv[2]],
                                         stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
                os.close(slave)
                output = b""
                while output.count(b"\\n") < 2:
                    output += os.read(master, 4096)
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
                child.send_signal(signal.SIGWINCH)
                while True:
                    try:
                        chunk = os.read(master, 4096)
                    except OSError:
                        break
                    if not chunk:
                        break
                    output += chunk
                print(child.wait(), repr(output.decode()))
                """
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            let result = try runProcess("/usr/bin/python3", ["-c", harness, s, child], environment: environment)
            #expect(
                result.stdoutText
                    == "0 'True True os.terminal_size(columns=80, lines=24)\\r\\n\\x1b[31m***\\x1b[0m\\r\\n"
                    + "os.terminal_size(columns=120, lines=40)\\r\\n'\n", "\(result.stderr)")
        }
    }

    /// At a real terminal (expect's): Ctrl-C reaches the command once, from the terminal, not
    /// again from keychain-cli; the command sees a terminal and its output is masked.
    @Test func ctrlCAtATerminalReachesTheCommandOnce() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "ctrl-c-secret")
            let directory = try ScratchDirectory("ctrl-c")
            let child = directory.path("child.py")
            try Data(
                """
                import os, signal, time
                signal.pthread_sigmask(signal.SIG_SETMASK, [signal.SIGINT])
                print("tty", os.isatty(1), os.environ["V"], flush=True)
                signal.sigwait({signal.SIGINT})
                time.sleep(0.5)  # a second SIGINT (the race tested) would come within this: kept pending
                print("sigint", 1 + (signal.SIGINT in signal.sigpending()), flush=True)
                """.utf8
            ).write(to: URL(fileURLWithPath: child))
            let result = try expect(
                """
                spawn $env(KEYCHAIN_CLI) -s \(s) exec --env V=k -- /usr/bin/python3 \(child)
                expect "tty True ***"
                send "\\003"
                expect "sigint"
                expect eof
                catch wait status
                exit [lindex $status 3]
                """)
            #expect(result.status == 0, "\(result.stdoutText)")
            #expect(
                result.stdoutText.contains("tty True ***") && result.stdoutText.contains("sigint 1"),
                "\(result.stdoutText)")
            #expect(!result.stdoutText.contains("ctrl-c-secret"))
        }
    }

    /// A command that closes its output early, one that never reads its input, and one whose
    /// reader goes away (it gets SIGPIPE, as it would without keychain-cli): none hangs.
    @Test func oddChildrenEndAsTheyWouldWithoutMasking() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "odd-secret")
            let closed = try cli([
                "-s", s, "exec", "--env", "V=k", "--", "sh", "-c", #"exec >&-; sleep 0.2; echo "late $V" >&2"#,
            ])
            #expect(closed.status == 0 && closed.stderr == "late ***\n", "\(closed.stderr)")
            let unread = try cli(
                ["-s", s, "exec", "--env", "V=k", "--", "true"], stdin: Data(repeating: 65, count: 4 << 20), timeout: 20
            )
            #expect(unread.status == 0)
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            // (The test runner's children start with signals blocked, Python ignores SIGPIPE: as in a shell.)
            let pipeline = try runProcess(
                "/usr/bin/python3",
                [
                    "-c",
                    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
                        + "signal.signal(signal.SIGPIPE, signal.SIG_DFL); os.execv('/bin/bash', ['bash'] + sys.argv)",
                    "-c", #""$KC" -s "$1" exec --env V=k -- sh -c 'yes "$V"' | head -2; echo "${PIPESTATUS[@]}""#, "sh",
                    s,
                ],
                environment: environment, timeout: 20)
            #expect(pipeline.stdoutText == "***\n***\n141 0\n", "\(pipeline.stderr)")
        }
    }

    /// --file: a 0700 directory on a tmpfs in $CREDENTIALS_DIRECTORY, files 0400 that read the
    /// same every time (binary too), removed when the command ends, with --no-mask as well.
    @Test(arguments: CLIBackend.allCases)
    func filesAreOnATmpfsReadOnlyAndRemovedAfterwards(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "tls-key"], input: "-----BEGIN KEY-----\nfile-secret")
            _ = try cli(["-s", s, "set", "blob", "--raw"], stdin: Data([0, 1, 2, 255]))
            let script = #"""
                d=$CREDENTIALS_DIRECTORY; echo "$d" > "$0"
                stat -c '%a %U' "$d" "$d/tls.key" "$d/blob"; stat -f -c %T "$d"
                cat "$d/tls.key" "$d/tls.key" | wc -c; od -An -tx1 "$d/blob"
                """#
            for mask in [[], ["--no-mask"]] {
                let record = FileManager.default.temporaryDirectory.appendingPathComponent("kc-file-\(UUID())").path
                defer { try? FileManager.default.removeItem(atPath: record) }
                let result = try cli(
                    ["-s", s, "exec"] + mask + [
                        "--file", "tls.key=tls-key", "--file", "blob=blob", "--", "sh", "-c", script, record,
                    ])
                let user = String(cString: getpwuid(getuid())!.pointee.pw_name)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(
                    result.stdoutText == "700 \(user)\n400 \(user)\n400 \(user)\ntmpfs\n62\n 00 01 02 ff\n",
                    "\(mask): \(result.stdoutText)")
                let directory = try String(contentsOfFile: record, encoding: .utf8).trimmingCharacters(in: .newlines)
                #expect(directory.hasPrefix("/"))
                #expect(
                    eventually(timeout: 10) { !FileManager.default.fileExists(atPath: directory) },
                    "\(directory) is left")
            }
        }
    }

    /// SIGKILL of keychain-cli (masking, so it is the command's parent) still removes the files.
    @Test func filesAreRemovedWhenKeychainCLIIsKilled() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "killed-secret")
            let record = FileManager.default.temporaryDirectory.appendingPathComponent("kc-file-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: record) }
            // The command lives until the test closes its input: it is ended without a signal,
            // so no other test's process can be hit by one. keychain-cli is a ChildProcess: the
            // SIGKILL goes to a pid not reaped yet, its own.
            var input: [Int32] = [0, 0]
            try #require(pipe(&input) == 0)
            defer { close(input[1]) }
            let process = try ChildProcess(
                keychainCLIPath,
                [
                    "-s", s, "exec", "--file", "k=k", "--", "sh", "-c",
                    #"echo "$CREDENTIALS_DIRECTORY" > "$0.new" && mv "$0.new" "$0"; exec cat > /dev/null"#,
                    record,
                ], environment: cliEnvironment(),
                files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)], descriptors: [(0, input[0])])
            close(input[0])
            defer { process.killAndWait() }
            // (Renamed into place: once there, it is whole.)
            #expect(eventually(timeout: 30) { FileManager.default.fileExists(atPath: record) })
            let directory = try String(contentsOfFile: record, encoding: .utf8).trimmingCharacters(in: .newlines)
            #expect(FileManager.default.fileExists(atPath: "\(directory)/k"))
            process.killAndWait()
            #expect(
                eventually(timeout: 10) { !FileManager.default.fileExists(atPath: directory) }, "\(directory) is left")
        }
    }

    /// A directory whose remover was killed too (as by a SIGKILL to every keychain-cli) is removed by the
    /// next `exec --file` once a minute old; one whose remover lives is left, however old.
    @Test func theNextRunRemovesAnAbandonedDirectoryButNotALiveOne() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "abandoned-secret")
            var environment = cliEnvironment()
            environment["KC"] = keychainCLIPath
            environment["S"] = s
            // A tmpfs directory of this test's own: another test's `exec --file` would sweep the
            // abandoned directory too, and hold its lock at the moment this run tries it.
            let runtime = "/dev/shm/kc-abandoned-\(UUID())"
            try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
            defer { _ = try? runProcess("/bin/rm", ["-rf", runtime], environment: [:]) }
            chmod(runtime, 0o700)
            environment["XDG_RUNTIME_DIR"] = runtime
            // The commands read a FIFO the script alone holds open for writing: closing it ends
            // them, with no signal that could reach another test's process. Each says where its
            // directory is on a FIFO of its own, which `read` waits on. The abandoned run's remover
            // and command are keychain-cli's ($kc's) two children, read from /proc: it reaps
            // neither while it lives (the command waits on hold, the remover for $kc's end), so
            // their pids are still theirs when they are killed, $kc last (its end would start the
            // remover). `flock` on the directory, open, waits for a remover's lock to go: the
            // killed one's (the next keychain-cli must find it free), the live one's once it has
            // removed its directory (already gone: nothing to wait for).
            let script = #"""
                mkfifo hold abandoned live; exec 3<>hold
                start() { "$KC" -s "$S" exec --file k=k -- sh -c 'echo "$CREDENTIALS_DIRECTORY"; exec cat > /dev/null' < hold > "$1" 3>&- & }
                start abandoned; kc=$!; start live; live=$!
                read -r a < abandoned; read -r l < live
                set -- $(cat /proc/$kc/task/*/children)
                [ $# = 2 ] || { echo "children of keychain-cli: $*"; exit 1; }
                kill -9 "$@" $kc; wait $kc 2>/dev/null
                { flock -w 20 4 || echo "abandoned still locked"; } 4< "$a"
                touch -d '2 minutes ago' "$a" "$l"
                "$KC" -s "$S" exec --file k=k -- true
                [ -e "$a" ] && echo "abandoned left"; [ -e "$l/k" ] && echo "live kept"
                exec 3>&-; wait $live
                { flock -w 20 4; } 4< "$l" 2>/dev/null
                [ -e "$l" ] && echo "live left"
                """#
            let directory = try ScratchDirectory("abandoned")
            defer { directory.remove() }
            let result = try runProcess(
                "/usr/bin/python3",
                [
                    "-c",
                    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
                        + "os.execv('/bin/sh', ['sh', '-c', sys.argv[1], sys.argv[2]])",
                    #"cd "$0" && "# + script, directory.url.path,
                ], environment: environment, timeout: 30)
            #expect(result.stdoutText == "live kept\n", "\(result.stderr)")
        }
    }

    /// Bad names are usage errors, named without the value; a missing secret writes no file.
    @Test func badFileMappingsRunNothing() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "v4lue")
            for bad in ["../x=k", ".hidden=k", "a/b=k", "=k", "x", "a b=k"] {
                let result = try cli(["-s", s, "exec", "--file", bad, "--", "true"])
                #expect(result.status == 64, "\(bad): \(result.stderr)")
            }
            let twice = try cli(["-s", s, "exec", "--file", "a=k", "--file", "a=k", "--", "true"])
            #expect(twice.status == 64 && twice.stderr.contains("mapped twice"))
            let missing = try cli(["-s", s, "exec", "--file", "a=nothing", "--", "true"])
            #expect(missing.status == 1)
        }
    }

    /// The vault's passphrase from systemd's credential keychain-cli.passphrase.
    @Test func thePassphraseMayComeFromTheCredentialsDirectory() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "credential-read")
            let directory = try ScratchDirectory("credentials")
            try Data("\(CLIBackend.passphrase)\n".utf8).write(
                to: directory.url.appendingPathComponent("keychain-cli.passphrase"))
            let read = try cli(
                ["-s", s, "get", "k"], extra: ["KEYCHAIN_PASSPHRASE": "", "CREDENTIALS_DIRECTORY": directory.url.path])
            #expect(read.status == 77, "an empty variable is still the variable: \(read.stderr)")
            // Its hint does not tell the user to set a variable that is set.
            #expect(read.stderr.contains("Give the passphrase (not empty) in $KEYCHAIN_PASSPHRASE"), "\(read.stderr)")
            var environment = cliEnvironment()
            environment["KEYCHAIN_PASSPHRASE"] = nil
            environment["CREDENTIALS_DIRECTORY"] = directory.url.path
            let credential = try runProcess(keychainCLIPath, ["-s", s, "get", "k"], environment: environment)
            #expect(credential.status == 0 && credential.stdoutText == "credential-read", "\(credential.stderr)")
        }
    }
}
