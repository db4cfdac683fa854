import Foundation
import TestSupport
import Testing

@Suite("scan: what cannot be read")
struct ScanUnreadableTests {
    /// As a user who may not read some of the tree: each file and directory it cannot read is
    /// named in a note, the rest is scanned, and the exit says the scan was incomplete (74) when
    /// nothing was found, found (1) when something was.
    @Test(.enabled(if: geteuid() == 0, "setpriv needs root"))
    func anUnreadableFileIsNotedAndTheExitSaysTheScanWasIncomplete() throws {
        let scratch = try ScratchDirectory("scan-nobody")
        defer { scratch.remove() }
        let binary = try scratch.openWithCopyOfCLI()
        let environment = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": scratch.path("vault.age"),
            "KEYCHAIN_PASSPHRASE": CLIBackend.passphrase, "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            "HOME": scratch.url.path,
        ]
        let set = try runAsNobody(
            [binary, "-s", "ci", "set", "token"], environment: environment, stdin: Data(ScanSecrets.token.utf8))
        #expect(set.status == 0, "\(set.stderr)")
        let tree = scratch.path("tree")
        try FileManager.default.createDirectory(atPath: tree + "/closed", withIntermediateDirectories: true)
        for (name, text) in [("open.txt", "nothing\n"), ("private.txt", ScanSecrets.token), ("closed/x", "x")] {
            #expect(FileManager.default.createFile(atPath: tree + "/" + name, contents: Data(text.utf8)))
        }
        chmod(tree, 0o755)
        chmod(tree + "/open.txt", 0o644)
        chmod(tree + "/private.txt", 0o600)
        chmod(tree + "/closed", 0o700)

        let incomplete = try runAsNobody([binary, "scan", "--from", "ci", tree], environment: environment)
        #expect(incomplete.status == 74, "\(incomplete.stdoutText)\(incomplete.stderr)")
        #expect(incomplete.stdout.isEmpty)
        #expect(incomplete.stderr.contains("cannot read '\(tree)/private.txt' (Permission denied); skipped"))
        #expect(incomplete.stderr.contains("cannot read '\(tree)/closed' (Permission denied); skipped"))

        #expect(FileManager.default.createFile(atPath: tree + "/leak.txt", contents: Data(ScanSecrets.token.utf8)))
        chmod(tree + "/leak.txt", 0o644)
        let found = try runAsNobody([binary, "scan", "--from", "ci", tree], environment: environment)
        #expect(found.status == 1, "\(found.stderr)")
        #expect(found.stdoutText == "\(tree)/leak.txt:1: ci/token (plain)\n")
        #expect(found.stderr.contains("private.txt"))
        ScanSecrets.expectNoSecret(in: found)
    }
}
