import Foundation
import TestSupport
import Testing

/// serve when OpenBao stalls under its watcher, and when serve itself is killed.
@Suite("serve: a stalled OpenBao, a killed serve")
struct ServeStallAndKillTests {
    /// A request of the watcher to an OpenBao that stopped answering (held for the whole time
    /// limit, here 30 s) does not hold up a client's CreateItem, which goes out on a connection
    /// of its own: before, the two shared one, and the write waited out the watcher's request.
    @Test func aStalledWatcherRequestDoesNotHoldUpAWrite() throws {
        try StallProxy.withMount { server, mount, proxied in
            let result = try served(
                """
                mkfifo "$STALL.held"; exec 5<> "$STALL.held"; touch "$STALL"
                read -r held <&5; rm "$STALL"  # once a request of the watcher's is held
                python3 -c 'from ssclient import *
                c = Client()
                try:
                    c.create({"service": "st", "username": "u"}, "v", replace=True); print("created")
                except Exception as error:
                    print(repr(error))'
                """, extra: proxied.merging(["KEYCHAIN_TIMEOUT": "30"]) { a, _ in a }, timeout: 120)
            #expect(result.stdoutText == "created\n", "\(result.stderr)")
            #expect(try server.bao(["kv", "get", "-field=u", "\(mount)/st"]).stdoutText == "v")
        }
    }

    /// serve -- COMMAND killed with SIGKILL: its command gets SIGTERM (SIGKILL 5 s later if it
    /// ignores it) rather than run on without its bus, and the private bus's directory is removed.
    /// Before, the command ran on orphaned and an empty directory stayed behind.
    @Test(arguments: ["exit 0", ""])
    func aKilledServeTakesItsCommandAndBusDirectoryWithIt(onTerm: String) throws {
        try CLIBackend.withVault { _ in
            let directory = try ScratchDirectory("killed")
            defer { directory.remove() }
            // The command says where its bus is on a FIFO, and holds another (alive) open for
            // writing: its end is the end of file there. It runs until ended (the subject) or
            // until the file stop appears or its directory is gone (a loop that had not looked when
            // stop came and went with the directory would spin for ever): what is left running is
            // ended without a signal.
            let script = """
                \(servedScriptFunctions)
                mkfifo bus alive
                "$K" serve -- sh -c 'trap "\(onTerm)" TERM; echo "$DBUS_SESSION_BUS_ADDRESS" > bus; exec 9> alive
                    here=$PWD; while [ -d "$here" ] && [ ! -e "$here/stop" ]; do sleep 0.1; done' &
                serve=$!
                read -r address < bus; exec 8< alive
                kill -9 $serve
                bus=$(echo "$address" | sed 's/^unix:path=//; s/,.*//')
                # (SIGTERM, or SIGKILL 5 s on, is due long before 20 s.)
                timeout 20 cat <&8 && echo "command ended" || echo "command alive"
                eventually [ ! -e "$(dirname "$bus")" ] && echo "directory removed" || echo "directory left"
                touch stop  # nothing left behind, whatever the outcome
                exit 0
                """
            var environment = cliEnvironment()
            environment["K"] = keychainCLIPath
            let result = try runProcess(
                "/bin/sh", ["-c", "cd \"\(directory.url.path)\" || exit 99\n\(script)"], environment: environment,
                timeout: 60)
            #expect(result.stdoutText == "command ended\ndirectory removed\n", "\(result.stderr)")
        }
    }

    /// SIGTERM right as the command starts (its first act, here) is passed on to the command,
    /// which ignores it and uses its bus: serve ends with the command's status. Before, serve's
    /// handlers came after the command started, and the signal ended serve itself (6 of 20). The
    /// command waits for the signal to come back to it (its trap ends the wait: a `sleep 30` run
    /// out exits 8), then uses its bus.
    @Test func aSignalAsTheCommandStartsIsPassedOn() throws {
        try CLIBackend.withVault { _ in
            var environment = cliEnvironment()
            environment["K"] = keychainCLIPath
            let result = try runProcess(
                "/bin/sh",
                [
                    "-c",
                    """
                    for i in $(seq 10); do
                        "$K" serve -- sh -c 'sleep 30 & s=$!; trap "kill $s" TERM; kill -TERM $PPID
                            wait $s; [ $? -gt 128 ] || exit 8
                            printf x | secret-tool store --label=t service s username u || exit 9; exit 5'
                        echo $?
                    done | sort | uniq -c | sed 's/^ *//'
                    """,
                ], environment: environment, timeout: 120)
            #expect(result.stdoutText == "10 5\n", "\(result.stderr)")
        }
    }

    /// A signal while serve opens the vault (its scrypt) or just after leaves no private bus
    /// directory behind, SIGKILL included: the directory is made once the vault is open, and a
    /// guardian removes it from then on (within 15 s here: it waits for the command first). Before,
    /// every signal in the opening left one.
    @Test(arguments: ["TERM", "KILL"])
    func aSignalDuringTheStartLeavesNothingBehind(signal: String) throws {
        try CLIBackend.withVault { _ in
            let slow = try cli(
                ["-s", "s", "set", "k"], stdin: Data("v".utf8), extra: ["KEYCHAIN_VAULT_WORK_FACTOR": "16"])
            #expect(slow.status == 0)
            let runtime = try ScratchDirectory("runtime")
            defer { runtime.remove() }
            var environment = cliEnvironment()
            environment["XDG_RUNTIME_DIR"] = runtime.url.path
            environment["K"] = keychainCLIPath
            // A command SIGTERM ends, whatever the test runner blocked.
            environment["COMMAND"] = """
                import signal, time
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                time.sleep(30)
                """
            let result = try runProcess(
                "/bin/sh",
                [
                    "-c",
                    """
                    \(servedScriptFunctions)
                    # (The delays are the subject: a signal at each moment of the start.)
                    for delay in 0.1 0.3 0.6 1 1.5 2; do
                        "$K" serve -- python3 -c "$COMMAND" "$XDG_RUNTIME_DIR" &
                        serve=$!
                        sleep $delay; kill -\(signal) $serve; wait $serve
                    done 2>/dev/null
                    # What is left: files, and processes with the directory in their arguments (the
                    # command, a dbus-daemon), only looked at in /proc (the pattern comes from a
                    # file, so grep's own arguments do not hold it).
                    pattern=$(mktemp); printf '%s\n' "$XDG_RUNTIME_DIR" > "$pattern"
                    left() { ls -A "$XDG_RUNTIME_DIR"; grep -lsFf "$pattern" /proc/[0-9]*/cmdline; }
                    none() { [ -z "$(left)" ]; }
                    # The guardian first ends the command (SIGTERM, SIGKILL 5 s on), then removes
                    # the directory: on a loaded machine the command's start alone can take seconds.
                    eventually none; left; rm -f "$pattern"
                    """,
                ], environment: environment, timeout: 120)
            #expect(result.stdoutText == "", "left behind: \(result.stdoutText) \(result.stderr)")
        }
    }

    /// The guardian removes whatever the bus's directory holds, not only the socket: `bus.conf`
    /// is there until dbus-daemon has read it, and a SIGKILL in that moment left the directory
    /// (a CI run under load). A file put there before the SIGKILL stands for it.
    @Test func theGuardianEmptiesTheDirectoryItRemoves() throws {
        try CLIBackend.withVault { _ in
            let runtime = try ScratchDirectory("runtime-files")
            defer { runtime.remove() }
            var environment = cliEnvironment()
            environment["XDG_RUNTIME_DIR"] = runtime.url.path
            environment["K"] = keychainCLIPath
            let result = try runProcess(
                "/bin/sh",
                [
                    "-c",
                    """
                    \(servedScriptFunctions)
                    "$K" serve -- sleep 60 2>/dev/null &
                    serve=$!
                    socket() { ls "$XDG_RUNTIME_DIR"/keychain-cli-bus.*/bus >/dev/null 2>&1; }
                    eventually socket || { echo "no bus"; exit 1; }
                    for directory in "$XDG_RUNTIME_DIR"/keychain-cli-bus.*; do
                        : > "$directory/bus.conf"; : > "$directory/.left-by-a-write"
                    done
                    kill -KILL $serve; wait $serve
                    none() { [ -z "$(ls -A "$XDG_RUNTIME_DIR")" ]; }
                    eventually none; ls -A "$XDG_RUNTIME_DIR"
                    """,
                ], environment: environment, timeout: 120)
            #expect(result.stdoutText == "", "left behind: \(result.stdoutText) \(result.stderr)")
        }
    }
}
