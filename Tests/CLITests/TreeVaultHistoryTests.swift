import Foundation
import TestSupport
import Testing

/// Runs the real git in `directory` with a fixed author and no user or system configuration.
private func commit(_ directory: String, _ message: String, author: String = "Ada <ada@example.org>") throws {
    let environment = [
        "PATH": "/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": directory,
    ]
    for arguments in [
        ["add", "-A"],
        [
            "-c", "user.name=\(author.split(separator: " <")[0])",
            "-c", "user.email=\(author.split(separator: "<")[1].dropLast())", "commit", "-qm", message,
        ],
    ] {
        let run = try runProcess("/usr/bin/git", ["-C", directory] + arguments, environment: environment)
        guard run.status == 0 else { throw FixtureFailed(detail: "git \(arguments[0]): \(run.stderr)") }
    }
}

private func gitInit(_ directory: String) throws {
    let run = try runProcess(
        "/usr/bin/git", ["init", "-q", directory], environment: ["PATH": "/usr/bin:/bin", "HOME": directory])
    guard run.status == 0 else { throw FixtureFailed(detail: "git init: \(run.stderr)") }
}

@Suite("history and rollback: git's commits for a tree vault, KV versions for OpenBao")
struct TreeVaultHistoryTests {
    /// Each commit that changed the item is one version, newest first, with its author, what
    /// changed and a fingerprint equal for equal values; rollback stores an earlier value as a
    /// new write; no value is ever printed.
    @Test func historyListsTheCommitsThatChangedTheItemAndRollbackRestoresOne() throws {
        try TreeFixture.run { tree in
            try gitInit(tree.vault)
            try commit(tree.vault, "init")
            let steps: [(String?, String)] = [
                ("s3cret-one", "Ada <ada@example.org>"), ("s3cret-two", "Bob <bob@example.org>"),
                ("s3cret-one", "Ada <ada@example.org>"), (nil, "Bob <bob@example.org>"),
            ]
            for (value, author) in steps {
                if let value {
                    #expect(try cli(["-s", "ci", "set", "token"], input: value).status == 0)
                } else {
                    #expect(try cli(["-s", "ci", "delete", "token"]).status == 0)
                }
                #expect(try cli(["-s", "ci", "set", "other"], input: UUID().uuidString).status == 0)
                try commit(tree.vault, "step", author: author)
            }
            let history = try cli(["-s", "ci", "history", "token"])
            #expect(history.status == 0, "\(history.stderr)")
            let lines = history.stdoutText.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(lines.map { $0[2] } == ["deleted", "value changed", "value changed", "created"])
            #expect(lines.map { $0.last! } == steps.reversed().map(\.1))
            #expect(lines[2][3] != lines[1][3] && lines[3][3] == lines[1][3] && lines[0][3] == "-")
            #expect(!history.stdoutText.contains("s3cret"))
            // Rollback to the version before the delete: a new write, which history then shows.
            let revision = lines[1][0]
            let rolled = try cli(["-s", "ci", "rollback", "token", "--to", revision])
            #expect(rolled.status == 0, "\(rolled.stderr)")
            #expect(try cli(["-s", "ci", "get", "token"]).stdoutText == "s3cret-one")
            let gone = try cli(["-s", "ci", "rollback", "token", "--to", "HEAD"])
            #expect(gone.status == 1, "\(gone.stderr)")
            let unknown = try cli(["-s", "ci", "rollback", "token", "--to", "no-such-rev"])
            #expect(unknown.status == 64 && unknown.stderr.contains("no commit"), "\(unknown.stderr)")
            let option = try cli(["-s", "ci", "rollback", "token", "--to", "--output=/tmp/x"])
            #expect(option.status == 64, "\(option.stderr)")
            let json = try cli(["-s", "ci", "history", "token", "--json"])
            let versions = try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]]
            #expect(versions?.count == 4 && versions?.first?["change"] as? String == "deleted")
        }
    }

    /// Outside a git work tree, on a single-file vault and on the Secret Service: 69, saying why.
    @Test func backendsWithoutVersionsSaySoWith69() throws {
        try TreeFixture.run { _ in
            let outside = try cli(["-s", "ci", "history", "token"])
            #expect(outside.status == 69 && outside.stderr.contains("not in a git work tree"), "\(outside.stderr)")
            #expect(try cli(["-s", "ci", "rollback", "token", "--to", "HEAD"]).status == 69)
        }
        try CLIBackend.withVault { _ in
            let single = try cli(["-s", "ci", "history", "token"])
            #expect(single.status == 69 && single.stderr.contains("single-file vault"), "\(single.stderr)")
        }
    }

    /// OpenBao: the KV versions in which the field changed (a write of another field is not one).
    @Test func openBaoHistoryIsTheKVVersionsThatChangedTheField() throws {
        try CLIBackend.withOpenBaoMount { _, _ in
            #expect(try cli(["-s", "ci", "set", "token"], input: "one").status == 0)  // 1
            #expect(try cli(["-s", "ci", "set", "other"], input: "x").status == 0)  // 2
            #expect(try cli(["-s", "ci", "set", "token"], input: "two").status == 0)  // 3
            #expect(try cli(["-s", "ci", "delete", "token"]).status == 0)  // 4
            let history = try cli(["-s", "ci", "history", "token"])
            #expect(history.status == 0, "\(history.stderr)")
            let lines = history.stdoutText.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            #expect(lines.map { $0[0] } == ["4", "3", "1"])
            #expect(lines.map { $0[2] } == ["deleted", "value changed", "created"])
            #expect(try cli(["-s", "ci", "rollback", "token", "--to", "1"]).status == 0)
            #expect(try cli(["-s", "ci", "get", "token"]).stdoutText == "one")
            #expect(try cli(["-s", "ci", "rollback", "token", "--to", "2x"]).status == 64)
        }
    }

    /// What `git checkout` and `git pull` change in a tree vault's files, watch reports: the
    /// items changed, created and deleted, each once.
    @Test func watchReportsWhatGitCheckoutAndPullChange() throws {
        try TreeFixture.run { tree in
            let git = { (directory: String, arguments: [String]) throws in
                let run = try runProcess(
                    "/usr/bin/git", ["-C", directory] + arguments,
                    environment: ["PATH": "/usr/bin:/bin", "HOME": directory, "GIT_CONFIG_NOSYSTEM": "1"])
                guard run.status == 0 else { throw FixtureFailed(detail: "git \(arguments): \(run.stderr)") }
            }
            try gitInit(tree.vault)
            for key in ["a", "b"] { #expect(try cli(["-s", "ci", "set", key], input: "1").status == 0) }
            try commit(tree.vault, "first")
            try git(tree.vault, ["checkout", "-q", "-b", "other"])
            #expect(try cli(["-s", "ci", "set", "a"], input: "2").status == 0)
            #expect(try cli(["-s", "ci", "set", "c"], input: "1").status == 0)
            #expect(try cli(["-s", "ci", "delete", "b"]).status == 0)
            try commit(tree.vault, "second")
            try git(tree.vault, ["checkout", "-q", "-"])
            let watch = try WatchProcess(["--interval", "0.2"], global: ["-s", "ci"], service: "ci")
            try git(tree.vault, ["checkout", "-q", "other"])
            #expect(Set(watch.nextLines(3)) == ["changed ci a", "created ci c", "deleted ci b"])
            #expect(try #require(watch.stop()).status == 0)
            // A clone, watched while `git pull` brings a commit in.
            let clone = tree.scratch.path("clone")
            try git(tree.scratch.url.path, ["clone", "-q", tree.vault, clone])
            try CLIBackend.$overrides.withValue(CLIBackend.overrides.merging(["KEYCHAIN_VAULT": clone]) { $1 }) {
                let pulled = try WatchProcess(["--interval", "0.2"], global: ["-s", "ci"], service: "ci")
                #expect(try cli(["-s", "ci", "set", "d"], input: "1", session: nil).status == 0)
                #expect(pulled.nextLines(1) == ["created ci d"])
                try CLIBackend.$overrides.withValue(CLIBackend.overrides.merging(["KEYCHAIN_VAULT": tree.vault]) { $1 })
                {
                    #expect(try cli(["-s", "ci", "set", "a"], input: "3").status == 0)
                    try commit(tree.vault, "third")
                }
                try git(clone, ["pull", "-q", "--no-rebase", "--no-edit"])
                #expect(pulled.nextLines(1) == ["changed ci a"])
                #expect(try #require(pulled.stop()).status == 0)
            }
        }
    }

    /// A version our identity does not open (written before we were a recipient) is listed as
    /// one that cannot be opened, not the end of the listing; inside .git there is no history (69).
    @Test func historyListsAVersionItCannotOpenAndRefusesAVaultInsideDotGit() throws {
        try TreeFixture.run { tree in
            try gitInit(tree.vault)
            #expect(try cli(["-s", "ci", "set", "token"], input: "one").status == 0)
            try commit(tree.vault, "one")
            let newcomer = tree.scratch.path("newcomer.txt")
            let recipient = try cli(["vault", "keygen", "-o", newcomer], session: nil).stdoutText
                .trimmingCharacters(in: .newlines)
            #expect(try cli(["vault", "recipients", "add", recipient]).status == 0)
            try commit(tree.vault, "newcomer")
            let history = try cli(["-s", "ci", "history", "token"], extra: ["KEYCHAIN_IDENTITY": newcomer])
            #expect(history.status == 0, "\(history.stderr)")
            let changes = history.stdoutText.split(separator: "\n").map { $0.split(separator: "\t")[2] }
            #expect(changes == ["first readable", "cannot be opened"], "\(history.stdoutText)")
            let inside = tree.vault + "/.git/vault"
            #expect(try cli(["vault", "init", inside, "--recipient", tree.recipient], session: nil).status == 0)
            let refused = try cli(["-s", "ci", "history", "token"], extra: ["KEYCHAIN_VAULT": inside])
            #expect(refused.status == 69, "\(refused.stderr)")
        }
    }
}
