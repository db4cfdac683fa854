import Foundation
import TestSupport
import Testing

/// `exec --file`: whatever tree the command leaves in $CREDENTIALS_DIRECTORY (deep, wide, read-only,
/// mode 000, symlinks out of it, a FIFO) is removed in bounded time, by keychain-cli, by its remover
/// after a SIGKILL, and by the next run's sweep of an abandoned directory; the command's status
/// comes back, and nothing a symlink leads to outside is touched.
@Suite("exec --file: the trees a command leaves", .keyringSession)
struct ExecCredentialsTreeTests {
    /// What the command leaves: 40 directories deep with a file at each level (the remover stopped
    /// at 16 and spun for ever), 2,000 entries wide, symlinks to a directory and a file outside, a
    /// FIFO, a file and a directory of mode 000, a read-only subtree (Go's module cache), and the
    /// directory itself made read-only. `$0`: where to write the directory's path, `$1`: outside.
    static let leaveATree = #"""
        d=$CREDENTIALS_DIRECTORY; echo "$d" > "$0"; cd "$d" || exit 1
        (for i in $(seq 40); do mkdir deep; cd deep; echo x > f; done)
        mkdir wide; (cd wide; for i in $(seq 1000); do mkdir "d$i"; : > "f$i"; done)
        ln -s "$1" out; ln -s "$1/keep" wide/d1/keep; mkfifo fifo; : > none; chmod 000 none
        mkdir -p zero/z; : > zero/z/f; chmod 000 zero/z zero
        mkdir -p mod/pkg@v1/sub; echo go > mod/pkg@v1/sub/go.mod; chmod -R a-w mod; chmod 500 "$d"
        """#

    @Test func anyTreeTheCommandLeavesIsRemovedAndItsStatusComesBack() throws {
        try withSecretAndScratch("tree") { s, scratch in
            let result = try cli(
                ["-s", s, "exec", "--file", "k=k", "--", "sh", "-c", Self.leaveATree + "\nexit 7"]
                    + [scratch.path("record"), scratch.url.path], timeout: 30)
            #expect(result.status == 7, "\(result.stderr)")
            try expectRemoved(recordedIn: scratch)
        }
    }

    /// The command renames the directory on its tmpfs (a swap into place) and leaves a process
    /// that writes into it: the directory goes all the same, where it was moved to, with and
    /// without keychain-cli staying (masked, and --no-mask, where the remover removes it).
    @Test(arguments: [false, true])
    func aDirectoryTheCommandRenamedGoesToo(noMask: Bool) throws {
        try withSecretAndScratch("renamed") { s, scratch in
            // The process left behind writes once the file is gone (a bounded poll: no event tells
            // of it), then says it has tried.
            let script = #"""
                printf %s "$CREDENTIALS_DIRECTORY.moved" > "$0"; mv "$CREDENTIALS_DIRECTORY" "$CREDENTIALS_DIRECTORY.moved"
                (d=$CREDENTIALS_DIRECTORY.moved; i=0; while [ -e "$d/k" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
                    cp "$d/k" "$d/copy" 2>/dev/null; : > "$1/tried") &
                exit 7
                """#
            let result = try cli(
                ["-s", s, "exec", "--file", "k=k"] + (noMask ? ["--no-mask"] : []) + ["--", "sh", "-c", script]
                    + [scratch.path("record"), scratch.url.path], timeout: 30)
            #expect(result.status == 7, "\(result.stderr)")
            try expectRemoved(recordedIn: scratch)
            #expect(eventually { FileManager.default.fileExists(atPath: scratch.path("tried")) })
            let moved = try String(contentsOfFile: scratch.path("record"), encoding: .utf8)
            #expect(!FileManager.default.fileExists(atPath: moved), "\(moved) came back")
        }
    }

    /// keychain-cli killed while its command runs: its remover removes the same tree.
    @Test func theRemoverRemovesAnyTreeAfterASIGKILL() throws {
        try withSecretAndScratch("tree-killed") { s, scratch in
            // The command waits on a FIFO the test holds and ends when the test closes it: no
            // signal to a process keychain-cli started.
            let hold = scratch.path("hold")
            #expect(mkfifo(hold, 0o600) == 0)
            let process = try ChildProcess(
                keychainCLIPath,
                [
                    "-s", s, "exec", "--file", "k=k", "--", "sh", "-c",
                    Self.leaveATree + #"\#necho $$ > "$1/pid"; exec cat "$1/hold""#, scratch.path("record"),
                    scratch.url.path,
                ], environment: cliEnvironment(),
                files: [(0, "/dev/null", O_RDONLY), (1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)])
            defer { process.killAndWait() }
            // Held open (read and write, so the open does not wait for the reader) until the end.
            let writer = open(hold, O_RDWR)
            defer { if writer >= 0 { close(writer) } }
            #expect(eventually { FileManager.default.fileExists(atPath: scratch.path("pid")) })
            process.signal(SIGKILL)
            try expectRemoved(recordedIn: scratch)
        }
    }

    /// A process the command leaves behind goes on adding directories while keychain-cli removes
    /// the tree: keychain-cli still ends, with the command's status (what is added after is left
    /// for the next run's sweep).
    @Test func aTreeStillGrowingDoesNotKeepKeychainCLIRunning() throws {
        try withSecretAndScratch("tree-growing") { s, scratch in
            // (mkdir without -p: one still running as the grower is killed cannot make the
            // directory again once the test has removed it.)
            let script = #"""
                d=$CREDENTIALS_DIRECTORY; echo "$d" > "$0"
                (i=0; while [ -d "$1" ] && [ ! -e "$1/stop" ]; do mkdir "$d/g$((i % 50))" "$d/g$((i % 50))/x$i"; i=$((i + 1)); done) > /dev/null 2>&1 &
                while [ ! -d "$d/g49" ]; do sleep 0.01; done
                exit 5
                """#
            let result = try cli(
                ["-s", s, "exec", "--file", "k=k", "--", "sh", "-c", script, scratch.path("record"), scratch.url.path],
                timeout: 30)
            // The grower stops when told (a file, not a signal to a pid it may no longer have), or
            // once the scratch directory is gone: a loop that had not looked before the directory
            // was removed spun for ever on a loaded machine (and slowed every later test).
            _ = FileManager.default.createFile(atPath: scratch.path("stop"), contents: nil)
            #expect(result.status == 5, "\(result.stderr)")
            let directory = try String(contentsOfFile: scratch.path("record"), encoding: .utf8).trimmed
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// As a plain user, who cannot unlink in a read-only directory nor open one of mode 000: the
    /// remover makes its directories u+rwx first, at the end of a run and in the next run's sweep
    /// of a directory abandoned a minute ago (its remover killed too).
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func readOnlyDirectoriesAreRemovedAsAPlainUserAndByTheSweep() throws {
        let scratch = try ScratchDirectory("tree-nobody")
        defer { scratch.remove() }
        let binary = try scratch.openWithCopyOfCLI()
        try Data("kept".utf8).write(to: scratch.url.appendingPathComponent("keep"))
        let runtime = "/dev/shm/kc-tree-\(UUID())"
        defer { _ = try? runProcess("/bin/rm", ["-rf", runtime], environment: [:]) }
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: false)
        _ = try runProcess("/bin/chown", ["nobody", runtime], environment: [:])
        chmod(runtime, 0o700)
        let environment = [
            "HOME": scratch.url.path, "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": scratch.path("v.age"),
            "KEYCHAIN_VAULT_WORK_FACTOR": "10", "XDG_RUNTIME_DIR": runtime,
            "KEYCHAIN_PASSPHRASE": CLIBackend.passphrase, "R": scratch.path("record"), "O": scratch.url.path,
            "S": Self.leaveATree,
        ]
        // An abandoned directory of an earlier run, as its command left it, two minutes old.
        let abandoned = "\(runtime)/keychain-cli-exec.abandoned"
        let script = #"""
            printf s | "$0" set k || exit 1
            mkdir -m 700 "$1" && CREDENTIALS_DIRECTORY="$1" sh -c "$S" "$1.record" "$O" || exit 1
            chmod 700 "$1"; touch -d '2 minutes ago' "$1"; chmod 000 "$1"
            "$0" exec --file k=k -- sh -c "$S; exit 7" "$R" "$O"; echo "status $?"
            """#
        let result = try runAsNobody(["sh", "-c", script, binary, abandoned], environment: environment)
        #expect(result.stdoutText == "status 7\n", "\(result.stderr)")
        try expectRemoved(recordedIn: scratch)
        #expect(!FileManager.default.fileExists(atPath: abandoned), "the sweep left \(abandoned)")
    }

    /// A vault holding the secret k of a new service, and a scratch directory holding the file
    /// keep, which the tree's symlinks lead to.
    private func withSecretAndScratch(_ label: String, _ body: (String, ScratchDirectory) throws -> Void) throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "\(label)-secret")
            let scratch = try ScratchDirectory(label)
            defer { scratch.remove() }
            try Data("kept".utf8).write(to: scratch.url.appendingPathComponent("keep"))
            try body(s, scratch)
        }
    }

    /// The directory named in `record` goes, and what its symlinks led to stays.
    private func expectRemoved(recordedIn scratch: ScratchDirectory) throws {
        let directory = try String(contentsOfFile: scratch.path("record"), encoding: .utf8).trimmed
        #expect(directory.hasPrefix("/"))
        #expect(eventually { !FileManager.default.fileExists(atPath: directory) }, "\(directory) is left")
        #expect(try String(contentsOfFile: scratch.path("keep"), encoding: .utf8) == "kept")
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
