import Foundation
import TestSupport
import Testing

/// A scratch tree for scan: files written under one directory, removed afterwards.
struct ScanTree {
    let directory: ScratchDirectory
    var root: String { directory.url.path }

    init() throws { directory = try ScratchDirectory("scan") }

    func write(_ name: String, _ bytes: Data) throws {
        let url = directory.url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: url)
    }

    func write(_ name: String, _ text: String) throws { try write(name, Data(text.utf8)) }

    /// `path` as scan names a file under the tree.
    func path(_ name: String) -> String { root + "/" + name }
}

/// The secrets the tests store, and every form of them that must never be printed.
enum ScanSecrets {
    static let token = "ghp_Zq8vN2xK7mW4pR9tY3uH6jD1sF5gL0aB"
    static let multi = "first-line-of-key-AAAA\nsecond-line-of-key-BBBB"
    static let long = "correct horse battery staple, with a long tail of words 1234567890"

    /// The secrets and their plain base64, which no output may hold.
    static var forbidden: [String] {
        [token, multi, long, "first-line-of-key", "second-line-of-key"]
            + [token, long].map { Data($0.utf8).base64EncodedString() }
    }

    /// Stores the test secrets (and a short one) in a new service; returns its name.
    static func store() throws -> String {
        let service = uniqueService("scan")
        for (key, value) in [("token", token), ("multi", multi), ("long", long), ("pin", "1234")] {
            let set = try cli(["-s", service, "set", key], input: value)
            guard set.status == 0 else { throw FixtureFailed(detail: "set \(key): \(set.stderr)") }
        }
        return service
    }

    /// Checks that nothing of `result` repeats a secret.
    static func expectNoSecret(in result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for secret in forbidden {
            #expect(!result.stdoutText.contains(secret), sourceLocation: sourceLocation)
            #expect(!result.stderr.contains(secret), sourceLocation: sourceLocation)
        }
    }
}

@Suite("scan: stored secrets found where they should not be", .keyringSession)
struct ScanTests {
    /// Every form exec masks is found in a tree, named by path, line, SERVICE/KEY and form: as it
    /// is, a secret of several lines whole, base64 in a binary file, base64 wrapped across lines,
    /// URL- and JSON-escaped; the short secret is named in a note and not looked for; a clean
    /// tree exits 0; nothing printed holds a secret.
    @Test(arguments: CLIBackend.allCases)
    func everyFormIsFoundAndNoSecretIsPrinted(on backend: CLIBackend) throws {
        try backend.run {
            let s = try ScanSecrets.store()
            let tree = try ScanTree()
            defer { tree.directory.remove() }
            try tree.write("clean/readme.txt", "nothing here\n1234 is too short to look for\n")
            #expect(try cli(["scan", "--from", s, tree.path("clean")]).status == 0)

            try tree.write("found/config.env", "# settings\nA=1\nTOKEN=\(ScanSecrets.token)\n")
            try tree.write("found/key.pem", "header\n\(ScanSecrets.multi)\nfooter\n")
            var binary = Data([0, 0xFF, 0xFE, 0x10, 0x0A, 0x80])
            binary += Data(Data(ScanSecrets.token.utf8).base64EncodedString().utf8) + Data([0, 0x01, 0xC3])
            try tree.write("found/app.bin", binary)
            let wrapped = Data(ScanSecrets.long.utf8).base64EncodedString(options: [.lineLength64Characters])
            #expect(wrapped.contains("\r\n"))
            try tree.write("found/sub/wrapped.txt", "data:\n" + wrapped + "\n")
            let escaped = ScanSecrets.long.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            try tree.write("found/sub/url.log", "GET /?q=\(escaped) HTTP/1.1\n")
            try tree.write("found/sub/data.json", #"{"a": "\#(ScanSecrets.multi.replacing("\n", with: "\\n"))"}"#)

            let result = try cli(["scan", "--from", s, tree.path("found")])
            #expect(result.status == 1, "\(result.stderr)")
            let lines = Set(result.stdoutText.split(separator: "\n").map(String.init))
            let expected: Set<String> = [
                "\(tree.path("found/app.bin")):2: \(s)/token (base64)",
                "\(tree.path("found/config.env")):3: \(s)/token (plain)",
                "\(tree.path("found/key.pem")):2: \(s)/multi (plain)",
                "\(tree.path("found/sub/data.json")):1: \(s)/multi (json)",
                "\(tree.path("found/sub/url.log")):1: \(s)/long (url)",
                "\(tree.path("found/sub/wrapped.txt")):2: \(s)/long (base64)",
            ]
            #expect(lines == expected, "\(result.stdoutText)\n\(result.stderr)")
            #expect(result.stderr.contains("not looking for \(s)/pin: shorter than 8 characters"), "\(result.stderr)")
            ScanSecrets.expectNoSecret(in: result)
        }
    }

    /// A secret committed three commits back and removed since is found in the history only,
    /// with the commit that added it and its path; --git honours .gitignore.
    @Test(arguments: CLIBackend.allCases)
    func aSecretRemovedFromTheTreeIsFoundInTheHistory(on backend: CLIBackend) throws {
        try backend.run {
            let s = try ScanSecrets.store()
            let tree = try ScanTree()
            defer { tree.directory.remove() }
            let repository = tree.root
            _ = try ScanGit.run(["init", "-q", repository], in: nil)
            try tree.write("src/main.c", "int main(void) { return 0; }\n")
            try tree.write("deploy/settings.yml", "name: app\ntoken: \(ScanSecrets.token)\n")
            let added = try ScanGit.commit(repository, "add settings")
            try tree.write("deploy/settings.yml", "name: app\ntoken: ${TOKEN}\n")
            _ = try ScanGit.commit(repository, "take the token out")
            try tree.write("README", "app\n")
            _ = try ScanGit.commit(repository, "readme")
            try tree.write(".gitignore", "local.env\n")
            try tree.write("local.env", "TOKEN=\(ScanSecrets.token)\n")
            _ = try ScanGit.commit(repository, "ignore local.env")

            let now = try cli(["scan", "--from", s, "--git", repository])
            #expect(now.status == 0, "\(now.stdoutText)\(now.stderr)")
            let everything = try cli(["scan", "--from", s, repository])
            #expect(everything.stdoutText.contains("\(tree.path("local.env")):1: \(s)/token (plain)"))
            #expect(everything.status == 1)

            let history = try cli(["scan", "--from", s, "--git-history", repository])
            #expect(history.status == 1, "\(history.stderr)")
            #expect(history.stdoutText == "\(added):deploy/settings.yml:2: \(s)/token (plain)\n", "\(history.stderr)")
            let json = try cli(["scan", "--from", s, "--git-history", "--json", repository])
            let object = try #require(
                JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any], "\(json.stdoutText)")
            #expect(object["commit"] as? String == added)
            #expect(object["path"] as? String == "deploy/settings.yml")
            ScanSecrets.expectNoSecret(in: history)
            ScanSecrets.expectNoSecret(in: json)
        }
    }

    /// --json: one object per line, keys path, line, offset, service, key, form; standard input
    /// is `-`.
    @Test func jsonLinesFromStandardInput() throws {
        try CLIBackend.withVault { _ in
            let s = try ScanSecrets.store()
            let input = "one\ntwo \(ScanSecrets.token) and \(ScanSecrets.long)\n"
            let result = try cli(["scan", "--from", s, "--json", "-"], stdin: Data(input.utf8))
            #expect(result.status == 1, "\(result.stderr)")
            let objects = try result.stdoutText.split(separator: "\n").map {
                try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(objects.count == 2, "\(result.stdoutText)")
            for object in objects {
                #expect(Set(object.keys) == ["path", "line", "offset", "service", "key", "form"])
                #expect(object["path"] as? String == "-" && object["line"] as? Int == 2)
                #expect(object["service"] as? String == s && object["form"] as? String == "plain")
            }
            #expect(objects.map { $0["key"] as? String } == ["token", "long"])
            #expect(objects.map { $0["offset"] as? Int } == [8, 8 + ScanSecrets.token.utf8.count + 5])
            ScanSecrets.expectNoSecret(in: result)
        }
    }

    /// A link out of the tree is not followed and a FIFO in it is skipped with a note (exit 0:
    /// nothing found); a device named on the command line cannot be scanned: 74, with a note; a
    /// secret twice on one line is reported once.
    @Test func linksAreNotFollowedAndWhatIsNoFileIsNoted() throws {
        try CLIBackend.withVault { _ in
            let s = try ScanSecrets.store()
            let outside = try ScanTree()
            let tree = try ScanTree()
            defer {
                outside.directory.remove()
                tree.directory.remove()
            }
            try outside.write("leak.txt", ScanSecrets.token)
            try tree.write("a.txt", "clean\n")
            try FileManager.default.createSymbolicLink(atPath: tree.path("link"), withDestinationPath: outside.root)
            try FileManager.default.createSymbolicLink(
                atPath: tree.path("leak-link.txt"), withDestinationPath: outside.path("leak.txt"))
            #expect(mkfifo(tree.path("pipe"), 0o600) == 0)
            let clean = try cli(["scan", "--from", s, tree.root])
            #expect(clean.status == 0, "\(clean.stdoutText)\(clean.stderr)")
            #expect(clean.stderr.contains("'\(tree.path("pipe"))' is a FIFO, device or socket; skipped"))
            let device = try cli(["scan", "--from", s, "/dev/null", tree.root])
            #expect(device.status == 74 && device.stderr.contains("'/dev/null' is not a file or a directory"))
            try tree.write("twice.txt", "\(ScanSecrets.token) \(ScanSecrets.token)\n")
            let twice = try cli(["scan", "--from", s, tree.path("twice.txt")])
            #expect(twice.status == 1 && twice.stdoutText == "\(tree.path("twice.txt")):1: \(s)/token (plain)\n")
        }
    }

    /// A missing path stops the scan before anything is read (74, one line naming it); nothing
    /// to look for is a usage error (64); --from with --all-services too.
    @Test func badInputGetsAClearOneLineError() throws {
        try CLIBackend.withVault { _ in
            let s = try ScanSecrets.store()
            let missing = try cli(["scan", "--from", s, "/nonexistent/dist"])
            #expect(missing.status == 74)
            #expect(
                missing.stderr == "keychain-cli: cannot scan '/nonexistent/dist' (No such file or directory); "
                    + "nothing was scanned. Check the path\n")
            #expect(missing.stdout.isEmpty)
            let short = uniqueService("short")
            _ = try cli(["-s", short, "set", "pin"], input: "1234")
            let nothing = try cli(["scan", "--from", short, "/"])
            #expect(nothing.status == 64 && nothing.stderr.contains("no secret of 8 characters"), "\(nothing.stderr)")
            #expect(!nothing.stderr.contains("1234"))
            #expect(try cli(["scan", "--from", s, "--all-services", "."]).status == 64)
            #expect(try cli(["scan", "--from", s]).status == 64)
            let help = try cli(["scan", "--help"])
            #expect(help.status == 0 && help.stdoutText.contains("--git-history"))
        }
    }
}

/// The real git, with a fixed author and no configuration of the user's or the system's.
enum ScanGit {
    static func run(_ arguments: [String], in directory: String?) throws -> String {
        let environment = [
            "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
            "HOME": NSTemporaryDirectory(),
        ]
        let run = try runProcess(
            "/usr/bin/git", (directory.map { ["-C", $0] } ?? []) + arguments, environment: environment)
        guard run.status == 0 else { throw FixtureFailed(detail: "git \(arguments[0]): \(run.stderr)") }
        return run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Commits everything in `directory`; returns the commit's hash.
    static func commit(_ directory: String, _ message: String) throws -> String {
        _ = try run(["add", "-A"], in: directory)
        _ = try run(
            ["-c", "user.name=Ada", "-c", "user.email=ada@example.org", "commit", "-qm", message], in: directory)
        return try run(["rev-parse", "HEAD"], in: directory)
    }
}
