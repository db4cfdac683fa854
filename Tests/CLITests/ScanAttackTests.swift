import Foundation
import TestSupport
import Testing

/// What an outside attack on scan found (2026-11-29), each as a fact: nothing it could not read
/// is reported clean, a finding names a commit and path git has, and a secret in a file's name
/// is a finding, never printed.
@Suite("scan under attack", .keyringSession)
struct ScanAttackTests {
    let secret = "SuperSecretValue123"

    /// Runs `script` with sh in a new directory, keychain-cli as $K, on the test's backend.
    private func shell(_ script: String, in directory: ScratchDirectory) throws -> ProcessResult {
        var environment = cliEnvironment()
        environment["K"] = keychainCLIPath
        return try runProcess(
            "/bin/sh", ["-c", "cd \"$0\" && " + script, directory.url.path], environment: environment)
    }

    private let git = "git -c user.name=t -c user.email=t@t"

    @Test func whatCannotBeReadIsNeverReportedClean() throws {
        let scratch = try ScratchDirectory("scan-attack")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "ci", "set", "token"], input: secret)
            // A name that is not UTF-8, listed by git: a note naming it, byte by byte, and 74.
            let latin = try shell(
                "git init -q latin && cd latin && printf '\(secret)\\n' > \"$(printf 'lat\\351')\" && "
                    + "$K scan --from ci --git .", in: scratch)
            #expect(latin.status == 74, "\(latin.stderr)")
            #expect(latin.stderr.contains("lat\\xE9"), "\(latin.stderr)")
            // A path longer than the system takes (4096 bytes): a note and 74, not a clean 0.
            let deep = try shell(
                "python3 -c \"import os; os.mkdir('deep'); os.chdir('deep')\n"
                    + "for i in range(2100): os.mkdir('d'); os.chdir('d')\nopen('leak','w').write('\(secret)')\" && "
                    + "$K scan --from ci deep", in: scratch)
            #expect(deep.status == 74, "\(deep.stderr)")
            #expect(deep.stderr.contains("File name too long"), "\(deep.stderr)")
            // A blob git cannot read (a corrupt loose object): 74.
            let corrupt = try shell(
                "git init -q corrupt && cd corrupt && echo clean > a && echo other > b && git add -A && "
                    + "\(git) commit -qm 1 && b=$(git rev-parse HEAD:b) && f=.git/objects/$(echo $b | cut -c1-2)/"
                    + "$(echo $b | cut -c3-) && chmod u+w $f && echo garbage > $f && $K scan --from ci --git-history .",
                in: scratch)
            #expect(corrupt.status == 74, "\(corrupt.stderr)")
        }
    }

    @Test func historyFindingsNameACommitAndPathGitHas() throws {
        let scratch = try ScratchDirectory("scan-history-names")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "ci", "set", "token"], input: secret)
            // The same content under a path with a line break, then copied to another path later.
            let result = try shell(
                "git init -q r && cd r && printf '\(secret)\\n' > \"$(printf 'we\\nird')\" && git add -A && "
                    + "\(git) commit -qm one && cp \"$(printf 'we\\nird')\" later.txt && git add -A && "
                    + "\(git) commit -qm two && git rev-list --max-parents=0 HEAD > ../first && "
                    + "$K scan --from ci --git-history --json .", in: scratch)
            #expect(result.status == 1, "\(result.stderr)")
            let lines = result.stdoutText.split(separator: "\n")
            try #require(lines.count == 1, "\(result.stdoutText)")
            let first = try String(contentsOfFile: scratch.path("first"), encoding: .utf8)
            let finding = try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any]
            #expect(finding?["path"] as? String == "we\nird")
            #expect(
                finding?["commit"] as? String == first.trimmingCharacters(in: .whitespacesAndNewlines),
                "the oldest commit")
        }
    }

    @Test func aSecretInAFileNameIsAFindingShownMasked() throws {
        let scratch = try ScratchDirectory("scan-names")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            _ = try cli(["-s", "ci", "set", "token"], input: secret)
            try FileManager.default.createDirectory(atPath: scratch.path("dist"), withIntermediateDirectories: true)
            try "clean\n".write(toFile: scratch.path("dist/config-\(secret).json"), atomically: true, encoding: .utf8)
            for arguments in [
                ["scan", "--from", "ci", scratch.path("dist")],
                ["scan", "--from", "ci", "--json", scratch.path("dist")],
            ] {
                let result = try cli(arguments)
                #expect(result.status == 1, "\(result.stderr)")
                #expect(result.stdoutText.contains("config-***.json"), "\(result.stdoutText)")
                #expect(result.stdoutText.contains("file name"), "\(result.stdoutText)")
                #expect(!(result.stdoutText + result.stderr).contains(secret))
            }
        }
    }
}
