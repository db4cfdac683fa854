import Foundation
import TestSupport
import Testing

/// What the GitHub runner reads from `$GITHUB_ENV`, restated as facts (actions/runner's
/// SetEnvFileCommand): lines end at LF; `NAME<<DELIMITER` starts a value that runs to the first
/// line equal to DELIMITER, its lines joined with LF; `NAME=value` is one line.
private func readAsTheRunnerDoes(_ text: String) -> [String: String] {
    var variables: [String: String] = [:]
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
    while let line = lines.popFirst() {
        if let marker = line.firstRange(of: "<<") {
            let delimiter = line[marker.upperBound...]
            var value: [Substring] = []
            while let next = lines.popFirst(), next != delimiter { value.append(next) }
            variables[String(line[..<marker.lowerBound])] = value.joined(separator: "\n")
        } else if let equals = line.firstIndex(of: "=") {
            variables[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
    }
    return variables
}

/// What `docker run --env-file` reads, restated as facts (docker/cli's kvfile): a line ends at LF,
/// a CR before it dropped; leading white space is removed; `#` lines and empty ones are skipped;
/// the name runs to the first `=`, the value is the rest as it is.
private func readAsDockerDoes(_ text: String) -> [String: String] {
    var variables: [String: String] = [:]
    for raw in text.split(separator: "\n") {
        let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
        let trimmed = line.drop(while: { $0.isWhitespace })
        guard !trimmed.isEmpty, trimmed.first != "#", let equals = trimmed.firstIndex(of: "=") else { continue }
        variables[String(trimmed[..<equals])] = String(trimmed[trimmed.index(after: equals)...])
    }
    return variables
}

@Suite("export for CI: github-env and docker", .keyringSession)
final class CIFormatTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("ci-formats") }
    deinit { scratch.remove() }

    /// Values a reader gets back exactly: spaces at either end, `=`, `#`, `<<`, quotes inside.
    private let values = [
        "plain": "v4lue", "trailing": "with spaces  ", "leading": "  lead", "equals": "a=b=c", "hash": "#not-a-comment",
        "heredoc": "x<<EOF", "quote": #"say "hi""#, "unicode": "clé ☃",
    ]

    @Test(arguments: CLIBackend.allCases)
    func githubEnvIsReadBackExactlyAndMaskedInActions(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            var expected: [String: String] = [:]
            for (key, value) in values {
                #expect(try cli(["-s", s, "set", key], input: value).status == 0)
                expected[key.uppercased()] = value
            }
            // Lines, and a line end of its own (--raw keeps it).
            #expect(try cli(["-s", s, "set", "multi", "--raw"], input: "line one\nline two\n").status == 0)
            expected["MULTI"] = "line one\nline two\n"
            let exported = try cli(["-s", s, "export", "--yes", "--format", "github-env"])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(readAsTheRunnerDoes(exported.stdoutText) == expected)
            #expect(exported.stderr.isEmpty, "no ::add-mask:: outside GitHub Actions")
            let inActions = try cli(
                ["-s", s, "export", "--yes", "--format", "github-env"], extra: ["GITHUB_ACTIONS": "true"])
            let masks = Set(inActions.stderr.split(separator: "\n").map(String.init))
            // Each piece of a value, trimmed, as the runner itself would register it (none under 4).
            let wanted = Set(
                expected.values.flatMap { value in
                    value.split(separator: "\n").map { piece in
                        "::add-mask::" + piece.trimmingCharacters(in: .whitespaces)
                    }
                })
            #expect(masks == wanted)
            #expect(!inActions.stdoutText.contains("::add-mask::"))
        }
    }

    @Test(arguments: CLIBackend.allCases)
    func dockerEnvFilesAreReadBackExactlyByDockersRules(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            for (key, value) in values {
                #expect(try cli(["-s", s, "set", key], input: value).status == 0)
            }
            let exported = try cli(["-s", s, "export", "--yes", "--format", "docker"])
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(
                readAsDockerDoes(exported.stdoutText)
                    == Dictionary(uniqueKeysWithValues: values.map { ($0.uppercased(), $1) }))
            // The real docker CLI takes the file (it fails next, at the missing daemon).
            let file = scratch.path("\(s).env")
            try exported.stdout.write(to: URL(fileURLWithPath: file))
            let docker = try runProcess(
                dockerCLIPath, ["run", "--env-file", file, "--rm", "x", "true"],
                environment: ["DOCKER_HOST": "unix://\(scratch.path("no-daemon.sock"))", "HOME": scratch.url.path])
            #expect(docker.stderr.contains("Cannot connect to the Docker daemon"), "\(docker.stderr)")
        }
    }

    /// What docker would read otherwise is refused (65), naming the key and never the value.
    @Test func dockerRefusesWhatItWouldReadOtherwise() throws {
        try CLIBackend.withVault { _ in
            for (value, words) in [
                ("line one\nline two", "holds a line break"), ("\"quoted\"", "in a pair of quotes"),
                ("'single'", "in a pair of quotes"), (String(repeating: "x", count: 70_000), "over 64 KiB"),
            ] {
                let s = uniqueService()
                #expect(try cli(["-s", s, "set", "k"], input: value).status == 0)
                let result = try cli(["-s", s, "export", "--yes", "--format", "docker"])
                #expect(result.status == 65, "\(result.stderr)")
                #expect(
                    result.stderr.contains("the secret 'k' \(words)") || result.stderr.contains(words),
                    "\(result.stderr)")
                #expect(result.stdout.isEmpty && !result.stderr.contains(String(value.prefix(8))))
            }
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "carriage\rreturn")
            let github = try cli(["-s", s, "export", "--yes", "--format", "github-env"])
            #expect(github.status == 65 && github.stderr.contains("holds a CR"), "\(github.stderr)")
            let node = uniqueService()
            _ = try cli(["-s", node, "set", "node-options"], input: "--require /tmp/x.js")
            let refused = try cli(["-s", node, "export", "--yes", "--format", "github-env"])
            #expect(refused.status == 65 && refused.stderr.contains("which changes what"), "\(refused.stderr)")
            let all = try cli(["export", "--yes", "--all-services", "--format", "docker"])
            #expect(all.status == 64 && all.stderr.contains("use --format json with --all-services"))
        }
    }

    /// A key that would become BASH_ENV, LD_PRELOAD, PATH or GIT_ASKPASS for every later step of
    /// the job (as the runner reads $GITHUB_ENV), for a shell sourcing the file, or in a container
    /// is refused in every format of variables (65, one line naming key and variable, never the
    /// value, nothing written); JSON, which names no variable, still exports it.
    @Test func keysThatWouldChangeWhatLaterStepsRunAreRefused() throws {
        try CLIBackend.withVault { _ in
            for (key, name) in [
                ("bash-env", "BASH_ENV"), ("ld-preload", "LD_PRELOAD"), ("path", "PATH"),
                ("git-askpass", "GIT_ASKPASS"),
            ] {
                let s = uniqueService()
                _ = try cli(["-s", s, "set", "token"], input: "harmless-value")
                _ = try cli(["-s", s, "set", key], input: "/tmp/evil-\(key)")
                for format in ["github-env", "env", "docker"] {
                    let result = try cli(["-s", s, "export", "--yes", "--format", format])
                    #expect(result.status == 65, "\(format) \(key): \(result.stderr)")
                    #expect(readAsTheRunnerDoes(result.stdoutText)[name] == nil && result.stdout.isEmpty)
                    #expect(result.stderr.contains("'\(key)' would set \(name), which changes what programs run"))
                    #expect(result.stderr.split(separator: "\n").count == 1 && !result.stderr.contains("evil"))
                }
                let json = try cli(["-s", s, "export", "--yes"])
                #expect(json.status == 0 && json.stdoutText.contains("/tmp/evil-\(key)"), "\(json.stderr)")
            }
        }
    }
}
