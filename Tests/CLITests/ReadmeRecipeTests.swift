import Foundation
import TestSupport
import Testing

/// The repository's root, found from this file.
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// README.md and every Markdown file under docs/, as paths relative to the repository.
func documentationFiles() throws -> [String] {
    var files = ["README.md"]
    let docs = repository.appendingPathComponent("docs")
    let enumerator = try #require(FileManager.default.enumerator(atPath: docs.path))
    for case let path as String in enumerator where path.hasSuffix(".md") {
        files.append("docs/" + path)
    }
    return files.sorted()
}

/// The shell snippet that follows `<!-- tested: NAME -->` in README.md or a file of docs/,
/// exactly as written there. The marker must appear once in all of them together.
private func readmeSnippet(_ name: String) throws -> String {
    let marker = "<!-- tested: \(name) -->\n```sh\n"
    var found: [(file: String, snippet: String)] = []
    for file in try documentationFiles() {
        let text = try String(contentsOf: repository.appendingPathComponent(file), encoding: .utf8)
        var rest = text.startIndex..<text.endIndex
        while let start = text.range(of: marker, range: rest) {
            let end = try #require(
                text.range(of: "\n```\n", range: start.upperBound..<text.endIndex), "\(file): \(name) is not closed")
            found.append((file, String(text[start.upperBound..<end.lowerBound])))
            rest = end.upperBound..<text.endIndex
        }
    }
    try #require(found.count == 1, "snippet \(name) is marked \(found.count) times: \(found.map(\.file))")
    return found[0].snippet
}

/// Runs `snippet` with sh in `directory`, with keychain-cli on PATH and nothing from the
/// desktop: no session bus, a HOME of its own.
private func runSnippet(_ snippet: String, in directory: ScratchDirectory, environment extra: [String: String])
    throws -> ProcessResult
{
    let binaries = (keychainCLIPath as NSString).deletingLastPathComponent
    var environment = [
        "PATH": "\(binaries):/usr/bin:/bin", "HOME": directory.path("home"), "LANG": "C.UTF-8",
    ]
    environment.merge(extra) { _, new in new }
    try FileManager.default.createDirectory(atPath: directory.path("home"), withIntermediateDirectories: true)
    return try runProcess(
        "/bin/sh", ["-c", "set -e; cd \"$0\"; " + snippet, directory.url.path], environment: environment,
        timeout: 120)
}

/// A `./deploy.sh` that records what it was given.
private func writeDeployScript(in directory: ScratchDirectory, body: String) throws {
    let path = directory.path("deploy.sh")
    try Data("#!/bin/sh\n\(body)\n".utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o755)
}

@Suite("The documentation's headless recipes, run as written")
struct ReadmeRecipeTests {
    @Test func theVaultRecipeHandsTheCredentialsToTheDeployScript() throws {
        let directory = try ScratchDirectory("recipe-vault")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        try writeDeployScript(in: directory, body: #"printf '%s|%s' "$GITHUB_TOKEN" "$NPM_TOKEN" > deployed"#)
        _ = try runProcess("/usr/bin/git", ["init", "-q", directory.url.path], environment: ["PATH": "/usr/bin:/bin"])
        let result = try runSnippet(
            readmeSnippet("vault-recipe"), in: directory,
            environment: [
                "TOKEN": "gh-secret", "NPM_TOKEN": "npm-secret", "KEYCHAIN_PASSPHRASE": "the one CI secret",
                "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: directory.path("deployed"), encoding: .utf8) == "gh-secret|npm-secret")
        let vault = try Data(contentsOf: URL(fileURLWithPath: directory.path("ci/secrets.age")))
        #expect(vault.starts(with: Data("age-encryption.org/v1\n".utf8)))
        #expect(vault.range(of: Data("gh-secret".utf8)) == nil)
    }

    /// Leaving op run: a 1Password export imported, the .env's op:// references rewritten by the
    /// recipe's sed (a password, a field, a section's field), literals kept, and exec runs.
    @Test func theOpRunMigrationRunsTheSameEnvFile() throws {
        let directory = try ScratchDirectory("recipe-op-run")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        try writeDeployScript(
            in: directory, body: #"printf '%s|%s|%s|%s' "$DB_PASSWORD" "$DB_USER" "$API_KEY" "$HOST" > deployed"#)
        let data = #"""
            {"accounts": [{"vaults": [{"attrs": {"name": "Prod"}, "items": [
              {"state": "active", "categoryUuid": "001", "overview": {"title": "db"},
               "details": {"loginFields": [{"value": "dbuser", "designation": "username"},
                                           {"value": "db-pass-123", "designation": "password"}]}},
              {"state": "active", "categoryUuid": "005", "overview": {"title": "api"},
               "details": {"sections": [{"title": "keys", "fields": [{"title": "key", "value": {"concealed": "api-key-456"}}]}]}}
            ]}]}]}
            """#
        try ImportOnePasswordTests.write1PUX(directory.path("1PasswordExport.1pux"), data: data)
        try
            "DB_PASSWORD=op://Prod/db/password\nDB_USER=op://Prod/db/username\nAPI_KEY=op://Prod/api/keys/key\nHOST=db.internal\n"
            .write(toFile: directory.path(".env"), atomically: true, encoding: .utf8)
        let result = try runSnippet(
            readmeSnippet("op-run-migration").replacingOccurrences(of: "# before: ", with: "# "), in: directory,
            environment: [
                "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": directory.path("vault.age"),
                "KEYCHAIN_PASSPHRASE": "migration passphrase", "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            try String(contentsOfFile: directory.path("deployed"), encoding: .utf8)
                == "db-pass-123|dbuser|api-key-456|db.internal")
    }

    /// The team's tree vault: made for a member and CI, a secret added on a branch, its diff
    /// reviewed (a fingerprint, never the value), merged, and read by the CI job's identity.
    @Test func theTreeVaultRecipeReviewsAMergedSecretAndHandsItToCI() throws {
        let directory = try ScratchDirectory("recipe-tree")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        try writeDeployScript(in: directory, body: #"printf '%s' "$NPM_TOKEN" > deployed"#)
        let git = ["PATH": "/usr/bin:/bin", "HOME": directory.url.path]
        _ = try runProcess("/usr/bin/git", ["init", "-q", directory.url.path], environment: git)
        try Data("deploy.sh\ndeployed\nmember.txt\nci.txt\n".utf8).write(
            to: directory.url.appendingPathComponent(".gitignore"))
        var recipients: [String] = []
        for name in ["member", "ci"] {
            let made = try cli(["vault", "keygen", "-o", directory.path("\(name).txt")], session: nil)
            recipients.append(made.stdoutText.trimmingCharacters(in: .newlines))
        }
        try Data(recipients.map { "\($0)\n" }.joined().utf8).write(
            to: directory.url.appendingPathComponent("team-keys.txt"))
        // The member's ssh key (the recipe's ~/.ssh/id_ed25519), and the CI's allowed signers.
        let ssh = directory.path("home/.ssh")
        try FileManager.default.createDirectory(atPath: ssh, withIntermediateDirectories: true)
        #expect(try sshKeygen(["-q", "-t", "ed25519", "-N", "", "-f", ssh + "/id_ed25519"]).status == 0)
        let publicKey = try String(contentsOfFile: ssh + "/id_ed25519.pub", encoding: .utf8)
        try Data("ada@example.org \(publicKey)".utf8).write(to: URL(fileURLWithPath: directory.path("allowed")))
        let secret = "npm-secret-\(UUID().uuidString)"
        let result = try runSnippet(
            readmeSnippet("tree-vault-recipe"), in: directory,
            environment: [
                "NPM_TOKEN": secret, "KEYCHAIN_IDENTITY": directory.path("member.txt"),
                "CI_ALLOWED_SIGNERS": directory.path("allowed"),
                "CI_IDENTITY": try String(contentsOfFile: directory.path("ci.txt"), encoding: .utf8),
                "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org", "GIT_COMMITTER_NAME": "Ada",
                "GIT_COMMITTER_EMAIL": "ada@example.org", "GIT_CONFIG_NOSYSTEM": "1",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: directory.path("deployed"), encoding: .utf8) == secret)
        #expect(
            result.stdoutText.contains("npm-token") && result.stdoutText.contains("fingerprint"), "\(result.stdoutText)"
        )
        #expect(!result.stdoutText.contains(secret) && !result.stderr.contains(secret))
        let item = try Data(contentsOf: URL(fileURLWithPath: directory.path("secrets/ci/npm-token.age")))
        #expect(item.starts(with: Data("age-encryption.org/v1\n".utf8)))
        #expect(FileManager.default.fileExists(atPath: directory.path("secrets/ci/npm-token.age.sig")))
    }

    @Test func theSecretServiceRecipeStoresAndReadsInAPrivateKeyring() throws {
        let directory = try ScratchDirectory("recipe-keyring")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        try writeDeployScript(in: directory, body: "keychain-cli -s ci get github-token > deployed")
        let result = try runSnippet(
            readmeSnippet("secret-service-recipe"), in: directory,
            environment: [
                "TOKEN": "gh-secret", "KEYRING_PASSWORD": "keyring password",
                "XDG_RUNTIME_DIR": directory.path("home"),
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: directory.path("deployed"), encoding: .utf8) == "gh-secret")
    }

    /// serve: secret-tool stores through serve, python keyring reads it back through serve, and
    /// keychain-cli reads the same item from the vault afterwards.
    @Test func theServeRecipeGivesLibsecretAndPythonKeyringAServiceOnTheVault() throws {
        let directory = try ScratchDirectory("recipe-serve")
        defer { try? FileManager.default.removeItem(at: directory.url) }
        let result = try runSnippet(
            readmeSnippet("serve-recipe"), in: directory,
            environment: [
                "TOKEN": "gh-secret", "KEYCHAIN_PASSPHRASE": "the one CI secret", "KEYCHAIN_VAULT_WORK_FACTOR": "10",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try String(contentsOfFile: directory.path("deployed"), encoding: .utf8) == "gh-secret\n")
        #expect(result.stdoutText == "gh-secret")
    }
}
