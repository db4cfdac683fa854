import Foundation
import TestSupport
import Testing

/// `exec` at a real terminal (expect's) with its standard input elsewhere (`echo x | keychain-cli
/// exec …`, `< /dev/null`): the command can prompt on /dev/tty with echo off, Ctrl-C and Ctrl-Z
/// reach it, and a signal sent to the process group reaches it exactly once. Each as a shell with
/// job control starts keychain-cli (leading its group) and as a script does (in the script's group).
@Suite("exec: job control at a terminal", .keyringSession)
struct ExecJobControlTests {
    /// The command: `prompt` turns echo off on /dev/tty and reads a password there (SIGTTOU and
    /// SIGTTIN in a background group); `size` waits for a SIGWINCH that comes with a new size;
    /// `count` counts the SIGTERMs and SIGHUPs it gets, half a second after the first (also in
    /// the file beside it, .count).
    static let child = """
        import os, signal, sys, termios, time
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if sys.argv[1] == "prompt":
            tty = os.open("/dev/tty", os.O_RDWR)
            old = termios.tcgetattr(tty)
            new = termios.tcgetattr(tty)
            new[3] &= ~termios.ECHO
            termios.tcsetattr(tty, termios.TCSANOW, new)
            os.write(tty, b"pid %d password: " % os.getpid())
            line = b""
            while not line.endswith(b"\\n"):
                line += os.read(tty, 100)
            termios.tcsetattr(tty, termios.TCSANOW, old)
            print("got", len(line.strip()), flush=True)
        elif sys.argv[1] == "size":
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH])
            first = os.get_terminal_size(1)
            print("size", first.lines, first.columns, flush=True)
            deadline = time.monotonic() + 10
            while os.get_terminal_size(1) == first and time.monotonic() < deadline:
                signal.sigtimedwait([signal.SIGWINCH], 10)
            print("now %d %d" % tuple(reversed(os.get_terminal_size(1))), flush=True)
        else:
            watched = {signal.SIGTERM, signal.SIGHUP}
            signal.pthread_sigmask(signal.SIG_BLOCK, watched)
            print("ready", flush=True)
            signal.sigwaitinfo(watched)  # (not sigwait: Ctrl-C's KeyboardInterrupt still ends it)
            time.sleep(0.5)  # a second delivery (the race tested) would come within this: kept pending
            count = 1 + len(signal.sigpending() & watched)
            with open(sys.argv[0] + ".new", "w") as record: record.write("%d" % count)
            os.rename(sys.argv[0] + ".new", sys.argv[0] + ".count")
            print("signals", count, flush=True)
        """

    /// How expect starts keychain-cli: `exec` makes it the session's leader, as a shell with job
    /// control makes a job's first process its group's leader; the pipe puts it in the group of a
    /// shell without job control, as a script or make does.
    static let starts = [
        "leader": #"exec "$KEYCHAIN_CLI" -s "$0" exec --env V=k -- /usr/bin/python3 "$1" "$2" < /dev/null"#,
        "script":
            #"trap 'echo sh-term' TERM; echo x | "$KEYCHAIN_CLI" -s "$0" exec --env V=k -- /usr/bin/python3 "$1" "$2"; echo "status $?""#,
        "leader at the terminal": #"exec "$KEYCHAIN_CLI" -s "$0" exec --env V=k -- /usr/bin/python3 "$1" "$2""#,
        "script at the terminal":
            #"trap 'echo sh-term' TERM; "$KEYCHAIN_CLI" -s "$0" exec --env V=k -- /usr/bin/python3 "$1" "$2"; echo "status $?""#,
    ]

    /// A password typed at /dev/tty with echo off reaches the command (it hung, stopped by
    /// SIGTTOU, in a group of its own in the background).
    @Test(arguments: ["leader", "script"])
    func theCommandPromptsOnTheTerminalWithStdinElsewhere(started how: String) throws {
        let result = try run(how, "prompt", then: #"want "password: "; send "hunter22\r"; want "got 8""#)
        #expect(result.status == 0, "\(result.stdoutText)")
        #expect(how == "leader" || result.stdoutText.contains("status 0"), "\(result.stdoutText)")
    }

    /// Ctrl-C at the prompt ends the command and keychain-cli with it (it was deaf to it, waiting
    /// for a stopped command).
    @Test(arguments: ["leader", "script"])
    func ctrlCAtThePromptEndsTheCommand(started how: String) throws {
        let result = try run(how, "prompt", then: #"want "password: "; send "\003""#)
        #expect(result.status == 0, "\(result.stdoutText)")
        // (The script's shell gets the Ctrl-C too and ends; the terminal's end means keychain-cli's.)
        #expect(result.stdoutText.contains(how == "leader" ? "CHILDKILLED" : "wait"), "\(result.stdoutText)")
    }

    /// Ctrl-Z stops the command, and keychain-cli stops as a job does; continued (`fg` sends
    /// SIGCONT), keychain-cli gives the command the terminal back and continues it.
    @Test func ctrlZStopsTheJobAndSIGCONTContinuesIt() throws {
        let result = try run(
            "leader", "prompt",
            then: #"""
                want "password: "; send "\032"
                set pid [exp_pid]
                for {set i 0} {$i < 400} {incr i} {
                    if {[lindex [split [exec cat /proc/$pid/stat] " "] 2] eq "T"} break
                    after 50
                }
                puts "state [lindex [split [exec cat /proc/$pid/stat] " "] 2]"
                exec kill -CONT $pid; send "hunter22\r"; want "got 8"
                """#)
        #expect(result.status == 0 && result.stdoutText.contains("state T"), "\(result.stdoutText)")
    }

    /// A SIGTERM sent to the process group keychain-cli was started in (a supervisor, a CI
    /// runner cancelling) reaches the command once: with the terminal on stdin, it reached it
    /// directly and was passed on too.
    @Test(arguments: ["leader at the terminal", "script at the terminal", "leader", "script"])
    func aSignalToTheProcessGroupArrivesOnce(started how: String) throws {
        let result = try run(how, "count", then: #"want "ready"; exec kill -TERM -- -[exp_pid]; want "signals 1""#)
        #expect(result.status == 0, "\(result.stdoutText)")
    }

    /// A hangup of the terminal whose session keychain-cli leads (ssh -t, expect) reaches the
    /// command once: the terminal signals keychain-cli alone, the session's leader, which passes
    /// it on (it did not, sharing the command's group, and waited for ever).
    @Test func aHangupArrivesOnce() throws {
        let result = try run(
            "leader at the terminal", "count",
            then: #"""
                want "ready"; close; wait
                for {set i 0} {$i < 400 && ![file exists $CHILD.count]} {incr i} { after 50 }
                puts "count [exec cat $CHILD.count]"; exit 0
                """#)
        #expect(result.stdoutText.contains("count 1"), "\(result.stdoutText)")
    }

    /// A change of the terminal's size reaches the command's pty, and the command a SIGWINCH
    /// after it, also where the terminal signals it to the command's group and not to
    /// keychain-cli's (the command in the foreground, or in the script's group).
    @Test(arguments: ["leader at the terminal", "script at the terminal"])
    func theTerminalsSizeReachesTheCommand(started how: String) throws {
        let result = try run(
            how, "size",
            then: #"want "size "; exec stty rows 40 columns 120 < $spawn_out(slave,name); want "now 40 120""#)
        #expect(result.status == 0, "\(result.stdoutText)")
    }

    /// In an interactive bash (job control): Ctrl-Z at the prompt stops the job and `fg` gives
    /// the command the terminal again, with keychain-cli leading the job and later in a pipeline
    /// (`echo x | keychain-cli …`, where the pipeline's group is the job); a command whose output
    /// goes to a pipe (`| cat`, the reader in keychain-cli's group) gets the terminal when it
    /// prompts; Ctrl-C ends a pipeline whose command left a process behind (a terminal's signal
    /// goes to the command's group).
    @Test func inAnInteractiveBashJobControlWorks() throws {
        let command = #"\"\$KEYCHAIN_CLI\" -s $S exec --env V=k -- /usr/bin/python3 $CHILD"#
        let result = try run(
            #"""
            proc stopAndContinue {} {
                expect -re {pid ([0-9]+) password: } {} timeout { puts "TIMEOUT: pid"; exit 9 }
                set child $expect_out(1,string)
                send "\032"; want "Stopped"; want "PROMPT$ "; send "fg\r"
                for {set i 0} {$i < 400} {incr i} {
                    set stat [split [exec cat /proc/$child/stat] " "]
                    if {[lindex $stat 2] ne "T" && [lindex $stat 7] == [lindex $stat 4]} break
                    after 50
                }
                send "hunter22\r"; want "got 8"; want "PROMPT$ "
            }
            spawn env PS1=PROMPT$\  TERM=dumb bash --norc --noprofile -i
            want "PROMPT$ "
            send "\#(command) prompt\r"; stopAndContinue
            send "echo x | \#(command) prompt\r"; stopAndContinue
            send "\#(command) prompt | cat\r"; want "password: "; send "hunter22\r"; want "got 8"; want "PROMPT$ "
            send "\#(command) count | cat\r"; want "ready"; send "\003"; want "PROMPT$ "
            send "exit\r"
            """#)
        #expect(result.status == 0, "\(result.stdoutText)")
        #expect(result.stdoutText.components(separatedBy: "got 8").count == 4, "\(result.stdoutText)")
        // (Echo is back on after fg, as bash restores its own modes at a stop, with or without
        // keychain-cli; the pipeline's prompt keeps it off.)
        #expect(
            result.stdoutText.components(separatedBy: "Stopped").count == 3
                && result.stdoutText.components(separatedBy: "hunter22").count == 3)
    }

    /// Runs keychain-cli as `how` says under expect, with the command in `mode`, then `steps`.
    private func run(_ how: String, _ mode: String, then steps: String) throws -> ProcessResult {
        let start = Self.starts[how]!.replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "$", with: "\\$")
        return try run("spawn sh -c \"\(start)\" $S $CHILD \(mode)\n\(steps)")
    }

    /// Runs `script` under expect, with the secret k in the service $S and the command in the
    /// file $CHILD (`want TEXT` fails the script when TEXT does not come); expect's status is 0
    /// when every step passed and the terminal ended (9: a wait timed out, 8: output ended first).
    private func run(_ script: String) throws -> ProcessResult {
        var result: ProcessResult?
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "job-control-secret")
            let directory = try ScratchDirectory("job-control")
            defer { directory.remove() }
            let child = directory.path("child.py")
            try Data(Self.child.utf8).write(to: URL(fileURLWithPath: child))
            result = try expect(
                """
                set timeout 20
                set S \(s)
                set CHILD \(child)
                proc want {text} {
                    expect -ex $text {} timeout { puts "TIMEOUT: $text"; exit 9 } eof { puts "EOF: $text"; exit 8 }
                }
                \(script)
                expect eof {} timeout { puts "TIMEOUT: end"; exit 9 }
                puts "wait [wait]"
                exit 0
                """)
        }
        return try #require(result)
    }
}
