import Foundation
import TestSupport
import Testing

/// The real age and age-keygen (Debian age 1.1.1), run in `directory`.
private func age(_ arguments: [String], executable: String = "/usr/bin/age") throws -> ProcessResult {
    try runProcess(executable, arguments, environment: ["PATH": "/usr/bin:/bin"])
}

@Suite("Team vaults: age X25519 recipients and identities")
struct TeamVaultTests {
    @Test func keygenWritesA0600IdentityPrintsItsRecipientAndNeverReplacesAFile() throws {
        let directory = try ScratchDirectory("keygen")
        defer { directory.remove() }
        let path = directory.path("identity.txt")
        let made = try cli(["vault", "keygen", "-o", path], session: nil)
        #expect(made.status == 0, "\(made.stderr)")
        let recipient = made.stdoutText.trimmingCharacters(in: .newlines)
        #expect(recipient.hasPrefix("age1") && recipient.count == 62)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains("# public key: \(recipient)\n") && text.contains("\nAGE-SECRET-KEY-1"))
        // age-keygen -y derives the same recipient from our identity file.
        #expect(try age(["-y", path], executable: "/usr/bin/age-keygen").stdoutText == recipient + "\n")
        let again = try cli(["vault", "keygen", "-o", path], session: nil)
        #expect(again.status == 64)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text)
        // The docs' example, ~/.config/keychain-cli/identity.txt in a new HOME: the missing
        // directories are made, 0700, as the vault's own are.
        let nested = directory.path("home/.config/keychain-cli/identity.txt")
        let madeNested = try cli(["vault", "keygen", "-o", nested], session: nil)
        #expect(madeNested.status == 0, "\(madeNested.stderr)")
        let folder = try FileManager.default.attributesOfItem(atPath: directory.path("home/.config/keychain-cli"))
        #expect((folder[.posixPermissions] as? Int) == 0o700)
        #expect((try FileManager.default.attributesOfItem(atPath: nested)[.posixPermissions] as? Int) == 0o600)
    }

    /// A team vault made with `age -r` from an export: each member opens it with their own
    /// identity (ours from keygen, one from age-keygen), a write keeps every recipient (age -d -i
    /// of the other member opens the new version), and a stranger's identity is refused with 77.
    @Test func aVaultEncryptedToTwoRecipientsOpensForEachAndStaysOpenToBoth() throws {
        let directory = try ScratchDirectory("team")
        defer { directory.remove() }
        let ours = directory.path("ours.txt")
        let theirs = directory.path("theirs.txt")
        let stranger = directory.path("stranger.txt")
        let ourRecipient = try cli(["vault", "keygen", "-o", ours], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        #expect(try age(["-o", theirs], executable: "/usr/bin/age-keygen").status == 0)
        #expect(try age(["-o", stranger], executable: "/usr/bin/age-keygen").status == 0)
        let theirRecipient = try age(["-y", theirs], executable: "/usr/bin/age-keygen").stdoutText
            .trimmingCharacters(in: .newlines)
        // The document: an export of a passphrase vault.
        let document = directory.path("document.json")
        try CLIBackend.withVault { _ throws in
            #expect(try cli(["-s", "ci", "set", "github-token"], input: "ghp_team").status == 0)
            #expect(try cli(["-s", "ci", "export", "--yes", "-o", document]).status == 0)
        }
        let team = directory.path("team.age")
        let encrypted = try age(["-r", ourRecipient, "-r", theirRecipient, "-o", team, document])
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        let vault = ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": team]
        func withIdentity(_ path: String?) -> [String: String] {
            var environment = vault
            environment["KEYCHAIN_IDENTITY"] = path
            return environment
        }
        #expect(
            try cli(["-s", "ci", "get", "github-token"], session: nil, extra: withIdentity(ours)).stdoutText
                == "ghp_team")
        #expect(
            try cli(["--identity", theirs, "-s", "ci", "get", "github-token"], session: nil, extra: vault).stdoutText
                == "ghp_team")
        let write = try cli(
            ["-s", "ci", "set", "npm-token"], stdin: Data("npm_team".utf8), session: nil, extra: withIdentity(ours))
        #expect(write.status == 0, "\(write.stderr)")
        let opened = try age(["-d", "-i", theirs, team])
        #expect(opened.status == 0 && opened.stdoutText.contains("npm_team"))
        // CI: the identity from a descriptor (a secret held in memory), by option or by variable.
        for (arguments, extra) in [
            (["--identity-fd", "3", "-s", "ci", "get", "npm-token"], vault),
            (["-s", "ci", "get", "npm-token"], vault.merging(["KEYCHAIN_IDENTITY_FD": "3"]) { $1 }),
        ] {
            var environment = cliEnvironment(session: nil).merging(extra) { $1 }
            environment["KC"] = keychainCLIPath
            let fromFD = try runProcess(
                "/bin/sh", ["-c", #""$KC" "$@" 3<"$0""#, ours] + arguments, environment: environment)
            #expect(fromFD.status == 0 && fromFD.stdoutText == "npm_team", "\(arguments): \(fromFD.stderr)")
        }
        // exec drops $KEYCHAIN_IDENTITY_FD with its descriptor: a keychain-cli in the command
        // opens another vault by its own passphrase file (it read a closed descriptor, 74).
        let other = directory.path("other.age")
        try Data("other passphrase\n".utf8).write(to: URL(fileURLWithPath: directory.path("pass")))
        let otherVault = ["--vault", other, "--passphrase-file", directory.path("pass")]
        #expect(try cli(otherVault + ["set", "k"], stdin: Data("own".utf8), session: nil, extra: vault).status == 0)
        var environment = cliEnvironment(session: nil).merging(vault) { $1 }
        environment["KC"] = keychainCLIPath
        environment["KEYCHAIN_IDENTITY_FD"] = "3"
        let inside = #"printf '%s|%s|' "$T" "${KEYCHAIN_IDENTITY_FD-unset}"; "$KC" "$@""#
        let nested = try runProcess(
            "/bin/sh",
            [
                "-c", #"s=$1; shift; "$KC" -s ci exec --no-mask --env T=npm-token -- sh -c "$s" sh "$@" 3<"$0""#, ours,
                inside,
            ]
                + otherVault
                + ["get", "k"],
            environment: environment)
        #expect(nested.status == 0 && nested.stdoutText == "npm_team|unset|own", "\(nested.stderr)")
        // The identity on standard input (a file, which the command could reopen or seek back
        // in): read once, then /dev/null for exec's command, as for --passphrase-fd 0.
        let identity = try Data(contentsOf: URL(fileURLWithPath: ours))
        for mask in [[], ["--no-mask"]] {
            let command = ["sh", "-c", #"cat /dev/stdin; [ -n "$T" ] && printf set"#]
            let exec = try cli(
                ["--identity-fd", "0", "-s", "ci", "exec"] + mask + ["--env", "T=npm-token", "--"] + command,
                stdin: identity, session: nil, extra: vault)
            #expect(exec.status == 0 && exec.stdoutText == "set", "\(mask): \(exec.stderr)")
            #expect(!exec.stdoutText.contains("AGE-SECRET-KEY"), "exec's command read the identity")
        }
        let refused = try cli(["-s", "ci", "get", "github-token"], session: nil, extra: withIdentity(stranger))
        #expect(refused.status == 77 && refused.stderr.contains("none of the identities"))
        let none = try cli(["-s", "ci", "get", "github-token"], session: nil, extra: withIdentity(nil))
        #expect(none.status == 77 && none.stderr.contains("age recipients"))
        try Data("not an identity\n".utf8).write(to: URL(fileURLWithPath: directory.path("bad.txt")))
        let bad = try cli(
            ["-s", "ci", "get", "github-token"], session: nil, extra: withIdentity(directory.path("bad.txt")))
        #expect(bad.status == 77 && bad.stderr.contains("line 1"))
    }
}
