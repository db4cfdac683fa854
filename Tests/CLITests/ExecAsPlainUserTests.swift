import Foundation
import TestSupport
import Testing

/// `exec` run by a plain user (nobody) as well as by root: masking of the forms GitHub's runner
/// masks, --file's directory gone once the command ends, a key that would set PATH refused, and
/// the command's status back; through unlock's holder, so that the whole path runs as that user.
@Suite("exec as a plain user and as root")
struct ExecAsPlainUserTests {
    @Test(arguments: HolderUser.available)
    func execMasksHandsFilesAndRefusesAsEitherUser(user: HolderUser) throws {
        let place = try UnlockPlace(as: user)
        defer { place.finish() }
        #expect(try place.run(["unlock"], passphrase: true).status == 0)
        let record = place.scratch.path("credentials")
        let script = """
            printf '%s|%s|' "$T" "$(printf %s "$T" | base64 -w0)"; cat "$CREDENTIALS_DIRECTORY/token"; \
            printf '|%s' "$CREDENTIALS_DIRECTORY" > "$0"; exit 7
            """
        let run = try place.run(
            ["exec", "--env", "T=token", "--file", "token=token", "--", "sh", "-c", script, record])
        #expect(run.status == 7, "the command's status: \(run.stderr)")
        #expect(!run.stdoutText.contains(place.secret), "\(run.stdoutText)")
        #expect(run.stdoutText == "***|***|***", "\(run.stdoutText)")
        let directory = try String(contentsOfFile: record, encoding: .utf8).dropFirst()
        #expect(!directory.isEmpty)
        #expect(
            eventually(timeout: 10) { !FileManager.default.fileExists(atPath: String(directory)) },
            "\(directory) is removed")
        #expect(try place.run(["set", "path"], stdin: Data("/tmp/evil".utf8)).status == 0)
        let refused = try place.run(["exec", "--from", "keychain-cli", "--", "true"])
        #expect(refused.status == 65 && refused.stderr.contains("PATH"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("/tmp/evil"))
    }
}
