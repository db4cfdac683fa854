import Foundation
import TestSupport
import Testing

/// Mistakes of the command line that a script makes without noticing: no command at all (`-ss` for
/// `-s s`), a mistyped recipient; and the fuzz target that must stop when given no time.
@Suite("Usage mistakes", .keyringSession)
struct UsageMistakesTests {
    /// `-ss` is `-s` twice, each taking the next word: `-ss set k` names no command. It must not
    /// exit 0 with the help on stdout, which `TOKEN=$(…)` would take for a token.
    @Test(arguments: CLIBackend.allCases)
    func noCommandIsAUsageErrorWithTheHelpOnStandardError(on backend: CLIBackend) throws {
        try backend.run {
            let stored = try cli(["-ss", "set", "k"], input: "t")
            #expect(stored.status == 64, "\(stored.stderr)")
            #expect(stored.stdout.isEmpty)
            #expect(
                stored.stderr.contains("OVERVIEW:")
                    && stored.stderr.contains("no command given ('-ss' is read as -s -s"))
            #expect(
                try cli(["list", "--all-services"]).stdoutText.split(separator: "\n").allSatisfy {
                    !$0.hasSuffix("\tk")
                })
            let token = try cli(["-ss", "get", "k"])
            #expect(token.status == 64 && token.stdout.isEmpty)
        }
        for arguments in [[], ["vault"], ["-s", "ci"]] {
            let result = try cli(arguments, session: nil)
            #expect(result.status == 64 && result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.hasSuffix("--help'\n") && result.stderr.contains("no command given"), "\(arguments)")
        }
        // Help asked for is still help, on stdout, with 0.
        #expect(try cli(["--help"], session: nil).status == 0)
        #expect(try cli(["vault", "--help"], session: nil).status == 0)
    }

    /// A bad value of an option is about that option: never "a key that starts with - goes after
    /// --" (the value is not a key), and a negative descriptor is a bad number, not a missing one.
    @Test func aBadOptionValueIsNotTakenForADashedKey() throws {
        for arguments in [
            ["get", "k", "--timeout=-1"], ["--timeout", "-5", "get", "k"], ["get", "k", "--timeout", "-5"],
            ["delete", "k", "--passphrase-fd=-1"], ["--passphrase-fd", "-1", "get", "k"],
            ["--identity-fd", "-2", "delete", "k"],
        ] {
            let result = try cli(arguments, session: nil)
            #expect(result.status == 64, "\(arguments)")
            #expect(!result.stderr.contains("goes after --"), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Missing value"), "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.contains("must be a number of seconds")
                    || result.stderr.contains("must be an open file descriptor number"),
                "\(arguments): \(result.stderr)")
        }
        // A key that does start with - still gets the advice.
        #expect(try cli(["get", "-k"], session: nil).stderr.contains("keychain-cli get -- -k"))
    }

    /// A recipient that is not one is refused before the vault's write lock is taken: it does not
    /// wait behind another writer.
    @Test func removingANonRecipientFailsWithoutWaitingForTheWriteLock() throws {
        let directory = try ScratchDirectory("remove-check")
        defer { directory.remove() }
        let identity = directory.path("id.txt")
        let recipient = try cli(["vault", "keygen", "-o", identity], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        let stranger = try cli(["vault", "keygen", "-o", directory.path("other.txt")], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        let vault = directory.path("team/vault.age")
        let base = ["--vault", vault, "--identity", identity]
        #expect(try cli(base + ["vault", "recipients", "add", recipient], session: nil).status == 0)
        // Another writer holds the lock (flock on the vault's directory) until the test closes
        // its stdin: a remove that waited for the lock would end with 75 after its --timeout.
        let ready = directory.path("locked")
        let stdin = Pipe()
        let holder = try ChildProcess(
            "/usr/bin/flock", [directory.path("team"), "sh", "-c", #": > "$0"; exec cat > /dev/null"#, ready],
            environment: ["PATH": "/usr/bin:/bin"], files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)],
            descriptors: [(0, stdin.fileHandleForReading.fileDescriptor)])
        try stdin.fileHandleForReading.close()
        defer {
            try? stdin.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        #expect(eventually(timeout: 10) { FileManager.default.fileExists(atPath: ready) }, "flock never held the lock")
        let result = try cli(base + ["--timeout", "8", "vault", "recipients", "remove", stranger], session: nil)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("is not one of the vault's recipients"), "\(result.stderr)")
    }
}
