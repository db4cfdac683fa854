import Foundation
import TestSupport
import Testing

/// `edit KEY` with a real vi at a terminal (expect's), killed while the editor is open, and with
/// the editors and files a hostile or careless user gives it.
@Suite("edit: vi, SIGKILL and hostile editors", .keyringSession)
struct EditAttackTests {
    /// vi, typed at by expect: the field changed, the newline vim adds dropped (the entry had
    /// none), and nothing left in $HOME (no viminfo: vim is run with -n -i NONE).
    @Test func viAtATerminalEditsAField() throws {
        try withVi("e", holding: "pw1\nusername: bob\n\nnotes") { s in
            """
            spawn $env(KEYCHAIN_CLI) -s \(s) edit e
            expect {
                "username: bob" {}
                timeout { exit 9 }
            }
            send ":%s/bob/alice/\\r"
            send ":wq\\r"
            expect {
                "stored the edited secret" {}
                timeout { exit 8 }
            }
            expect eof
            catch wait result
            exit [lindex $result 3]
            """
        } check: { (result, s, runtime, home) throws in
            #expect(result.status == 0, "\(result.stdoutText)")
            #expect(try cli(["-s", s, "get", "e", "--raw"]).stdoutText == "pw1\nusername: alice\n\nnotes")
            #expect(try FileManager.default.contentsOfDirectory(atPath: home).isEmpty)
            #expect(runtime.leftovers.isEmpty, "\(runtime.leftovers)")
        }
    }

    /// Ctrl-Z at an interactive shell stops keychain-cli and the editor together (one job, as
    /// git's editor is); `fg` continues both, and the edit is stored.
    @Test func ctrlZSuspendsEditAndItsEditorAsOneJob() throws {
        try withVi("z", holding: "pw1\nusername: bob") { s in
            """
            spawn env PS1=PROMPT> bash --norc --noprofile -i
            expect "PROMPT>"
            send "$env(KEYCHAIN_CLI) -s \(s) edit z\\r"
            expect {
                "username: bob" {}
                timeout { exit 9 }
            }
            send "\\x1a"
            expect {
                -re "Stopped.*PROMPT>" {}
                timeout { exit 8 }
            }
            send "ps -o stat=,comm= -t \\$(tty) | awk '\\$1 ~ /^T/ && (\\$2 == \\"keychain-cli\\" || \\$2 == \\"vi\\") { n++ } END { print \\"stopped\\", n }'\\r"
            expect {
                "stopped 2" {}
                timeout { exit 7 }
            }
            send "fg\\r"
            expect {
                "username: bob" {}
                timeout { exit 6 }
            }
            send ":%s/bob/carol/\\r:wq\\r"
            expect {
                "stored the edited secret" {}
                timeout { exit 5 }
            }
            send "exit\\r"
            expect eof
            """
        } check: { (result, s, _, _) throws in
            #expect(result.status == 0, "\(result.stdoutText)")
            #expect(try cli(["-s", s, "get", "z"]).stdoutText == "pw1\nusername: carol")
        }
    }

    /// Runs the expect script `script(SERVICE)` with $EDITOR vi, an empty $HOME and the runtime
    /// directory, `key` holding `secret`; `check` gets its result, the service, the runtime
    /// directory and $HOME.
    private func withVi(
        _ key: String, holding secret: String, script: (String) -> String,
        check: (ProcessResult, String, EditRuntime, String) throws -> Void
    ) throws {
        let home = try ScratchDirectory("edit-home")
        defer { home.remove() }
        try EditRuntime.with(key, holding: secret) { runtime, s in
            let prelude = """
                set timeout 20
                array set env {EDITOR vi VISUAL "" HOME \(home.url.path) XDG_RUNTIME_DIR \(runtime.path)}

                """
            try check(try expect(prelude + script(s)), s, runtime, home.url.path)
        }
    }

    /// keychain-cli killed with SIGKILL while the editor is open: the file (0600, in a 0700
    /// directory) goes with it, and nothing is stored.
    @Test func theFileIsRemovedWhenKeychainCLIIsKilled() throws {
        try EditRuntime.with("k", holding: "before-kill") { runtime, s in
            let record = "\(runtime.path)-record"
            defer { unlink(record) }
            // The editor writes, says where the file is (renamed into place: whole once there),
            // and waits for the test to close its input: no signal that could reach another process.
            var environment = cliEnvironment()
            environment.merge([
                "XDG_RUNTIME_DIR": runtime.path, "VISUAL": "",
                "EDITOR":
                    #"f() { echo edited > "$2"; echo "$2" > "$1.new" && mv "$1.new" "$1"; exec cat; }; f \#(record)"#,
            ]) { _, new in new }
            var input: [Int32] = [0, 0]
            try #require(pipe(&input) == 0)
            defer { close(input[1]) }
            let process = try ChildProcess(
                keychainCLIPath, ["-s", s, "edit", "k"], environment: environment,
                files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)], descriptors: [(0, input[0])])
            close(input[0])
            defer { process.killAndWait() }
            #expect(eventually(timeout: 30) { FileManager.default.fileExists(atPath: record) })
            let file = try String(contentsOfFile: record, encoding: .utf8).trimmingCharacters(in: .newlines)
            let directory = (file as NSString).deletingLastPathComponent
            var info = stat()
            #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)
            #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
            #expect(directory.hasPrefix(runtime.path + "/keychain-cli-edit.") && file.hasSuffix("/secret.txt"))
            process.killAndWait()
            #expect(eventually(timeout: 10) { runtime.leftovers.isEmpty }, "\(runtime.leftovers)")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "before-kill")
        }
    }

    /// An editor ended by SIGINT (Ctrl-C reached it): keychain-cli ends by SIGINT too, as git
    /// does, nothing stored, nothing left.
    @Test func anInterruptedEditorInterruptsEdit() throws {
        try EditRuntime.with("k", holding: "v1") { runtime, s in
            let result = try runtime.edit(s, "k", editor: #"f() { echo v2 > "$1"; kill -INT $$; }; f"#)
            #expect(result.signaled && result.status == SIGINT, "\(result.status) \(result.stderr)")
            #expect(result.stderr.contains("ended by signal 2"))
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v1" && runtime.leftovers.isEmpty)
        }
    }

    /// What the editor leaves decides, read from the path after it exits: a new file renamed
    /// over it (as vim may write) is stored; a symbolic link planted there (to a file of the
    /// user's) is never followed, nothing stored (1); a result over 1 MiB is 65.
    @Test func whatTheEditorLeavesAtThePath() throws {
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("kc-edit-\(UUID())").path
        try "not the secret".write(toFile: elsewhere, atomically: false, encoding: .utf8)
        defer { unlink(elsewhere) }
        try EditRuntime.with("k", holding: "v1") { runtime, s in
            let renamed = try runtime.edit(s, "k", editor: #"f() { printf v2 > "$1.new" && mv "$1.new" "$1"; }; f"#)
            #expect(try renamed.status == 0 && cli(["-s", s, "get", "k"]).stdoutText == "v2")
            let linked = try runtime.edit(s, "k", editor: #"f() { rm "$1"; ln -s \#(elsewhere) "$1"; }; f"#)
            #expect(linked.status == 1 && linked.stderr.contains("left no file"), "\(linked.stderr)")
            let huge = try runtime.edit(s, "k", editor: "truncate -s 2M")
            #expect(huge.status == 65 && huge.stderr.contains("limit of 1048576 bytes"), "\(huge.stderr)")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v2" && runtime.leftovers.isEmpty)
        }
    }

    /// $VISUAL before $EDITOR, a blank one passed over, quotes and spaces in it as a shell reads
    /// them, control characters kept exactly, a key that looks like an option after --.
    @Test func editorsAndKeysAsAUserWritesThem() throws {
        try EditRuntime.with("-k", holding: "a b\u{1B}[31m") { runtime, s in
            let quoted = try runtime.edit(
                s, "-k", editor: "false", extra: ["VISUAL": #"sed -i "s/a b/c  d/""#])
            #expect(quoted.status == 0, "\(quoted.stderr)")
            #expect(try cli(["-s", s, "get", "--raw", "--", "-k"]).stdoutText == "c  d\u{1B}[31m")
            let blank = try runtime.edit(s, "-k", editor: "sed -i s/d/e/", extra: ["VISUAL": "  "])
            #expect(try blank.status == 0 && cli(["-s", s, "get", "--raw", "--", "-k"]).stdoutText == "c  e\u{1B}[31m")
            // The key is an operand, however it looks; the message escapes it.
            let missing = try runtime.edit(s, "--help", editor: "true")
            #expect(missing.status == 1 && missing.stderr.contains("'--help'"), "\(missing.stderr)")
        }
    }
}
