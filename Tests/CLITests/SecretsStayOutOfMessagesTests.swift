import Foundation
import TestSupport
import Testing

/// A secret given where a path belongs (the usual CI mistake: a "variable" secret where a "file"
/// one was meant), a secret that a shell would run when it sources an export, and the passphrases
/// `exec` must not hand on: none of them may reach a message, a log or a child.
@Suite("Secrets stay out of messages, shells and children", .keyringSession)
final class SecretsStayOutOfMessagesTests {
    let scratch: ScratchDirectory
    /// An unencrypted OpenSSH ed25519 private key, and an age identity file (vault keygen).
    let sshKey: String
    let ageIdentity: String

    init() throws {
        scratch = try ScratchDirectory("misplaced")
        let key = scratch.path("id_ed25519")
        let made = try runProcess(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key], environment: [:])
        #expect(made.status == 0)
        sshKey = try String(contentsOfFile: key, encoding: .utf8)
        #expect(try cli(["vault", "keygen", "-o", scratch.path("identity.txt")], session: nil).status == 0)
        ageIdentity = try String(contentsOfFile: scratch.path("identity.txt"), encoding: .utf8)
    }

    deinit { scratch.remove() }

    /// Fails when `stderr` is not one line, or repeats any line of `secret` (or its key line).
    private func expectNotRepeated(_ secret: String, in result: ProcessResult, _ context: String) {
        #expect(result.stderr.hasPrefix("keychain-cli: "), "\(context): \(result.stderr)")
        #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(context): one line, got \(result.stderr)")
        for line in secret.split(whereSeparator: \.isNewline) where line.count >= 8 && !line.hasPrefix("#") {
            #expect(!result.stderr.contains(line), "\(context) repeats a line of the secret")
        }
        #expect(!result.stderr.contains("AGE-SECRET-KEY-1"), "\(context) repeats the age key")
        #expect(!result.stderr.contains("PRIVATE KEY"), "\(context) repeats the key's armour")
    }

    @Test func aKeyGivenWhereAPathBelongsIsRefusedWithoutRepeatingIt() throws {
        let vault = scratch.path("team.age")
        let keyLine = String(ageIdentity.split(separator: "\n").first { $0.hasPrefix("AGE-SECRET-KEY-1") }!)
        let cases: [(arguments: [String], environment: [String: String], context: String)] = [
            (["--vault", vault, "get", "k"], ["KEYCHAIN_IDENTITY": sshKey], "$KEYCHAIN_IDENTITY an ssh key"),
            (["--vault", vault, "get", "k"], ["KEYCHAIN_IDENTITY": ageIdentity], "$KEYCHAIN_IDENTITY an age identity"),
            (
                ["--vault", vault, "get", "k"], ["KEYCHAIN_IDENTITY": ageIdentity, "KEYCHAIN_IDENTITY_FD": ""],
                "$KEYCHAIN_IDENTITY an age identity, $KEYCHAIN_IDENTITY_FD empty (read as unset, as everywhere)"
            ),
            (
                ["--vault", vault, "--identity", sshKey, "get", "k"], [:],
                "--identity an ssh key (an option to the parser)"
            ),
            (["--vault", vault, "--identity", ageIdentity, "get", "k"], [:], "--identity an age identity"),
            (["--vault", vault, "get", "k", "--identity=\(sshKey)"], [:], "--identity= an ssh key"),
            (["--vault", vault, "get", "k", "--identity", " " + keyLine], [:], "--identity a key after a space"),
            (["--vault", vault, "--passphrase-file", ageIdentity, "get", "k"], [:], "--passphrase-file a key"),
            (["--backend", "vault", "get", "k"], ["KEYCHAIN_VAULT": sshKey], "$KEYCHAIN_VAULT a key"),
            (["--vault", vault, "vault", "passwd", "--new-passphrase-file", sshKey], [:], "--new-passphrase-file"),
            (["--vault", vault, "vault", "recipients", "add", ageIdentity], [:], "recipients add an identity file"),
            (["--vault", vault, "vault", "recipients", "add", keyLine], [:], "recipients add an age secret key"),
            (
                ["--vault", vault, "vault", "recipients", "add", " " + keyLine], [:],
                "recipients add a key after a space"
            ),
            (["--vault", vault, "vault", "recipients", "add", sshKey], [:], "recipients add an ssh private key"),
        ]
        for (arguments, environment, context) in cases {
            let result = try cli(
                arguments, session: nil, extra: environment.merging(["KEYCHAIN_PASSPHRASE": "pw"]) { a, _ in a })
            #expect(result.status == 64, "\(context): \(result.stderr)")
            expectNotRepeated(sshKey, in: result, context)
            expectNotRepeated(ageIdentity, in: result, context)
        }
        #expect(!FileManager.default.fileExists(atPath: vault), "nothing was written")
        // A file of secrets given as a file of recipients: its lines are not repeated either.
        let envFile = scratch.path("secrets.env")
        try Data("GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz\n".utf8).write(
            to: URL(fileURLWithPath: envFile))
        let notRecipients = try cli(
            ["--vault", vault, "vault", "recipients", "add", envFile], session: nil,
            extra: ["KEYCHAIN_PASSPHRASE": "pw"])
        #expect(notRecipients.status == 64, "\(notRecipients.stderr)")
        #expect(!notRecipients.stderr.contains("ghp_") && !notRecipients.stderr.contains("GITHUB_TOKEN"))
        // A plausible path that does not exist is still named, as before.
        let missing = try cli(
            ["--vault", vault, "--identity", scratch.path("no-such-identity.txt"), "get", "k"], session: nil)
        #expect(missing.status == 74)
        #expect(missing.stderr.contains("no-such-identity.txt"), "\(missing.stderr)")
    }

    @Test func anOpenBaoLoginSecretGivenAsItsFileIsRefusedWithoutRepeatingIt() throws {
        let secretID = "4f0e9c4c-8d1b-4a7e-9c55-0123456789ab"
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJjaSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
        let base = ["KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": "http://127.0.0.1:9"]
        let cases: [([String: String], String)] = [
            (["KEYCHAIN_OPENBAO_ROLE_ID": "ci", "KEYCHAIN_OPENBAO_SECRET_ID_FILE": secretID], secretID),
            (["KEYCHAIN_OPENBAO_JWT_FILE": jwt], jwt),
            (["KEYCHAIN_OPENBAO_JWT_FILE": " " + jwt], jwt),
        ]
        for (environment, secret) in cases {
            let result = try cli(["get", "k"], session: nil, extra: base.merging(environment) { a, _ in a })
            #expect(result.status == 64, "\(environment.keys.sorted()): \(result.stderr)")
            #expect(!result.stderr.contains(secret), "\(environment.keys.sorted()) repeats the secret")
            #expect(
                result.stderr.contains("not a path") && result.stderr.contains("_FILE to the path of a file"),
                "\(result.stderr)")
        }
    }

    /// `export --format env` escapes every character a shell's double quotes treat specially, so
    /// that `set -a; . ./app.env` runs nothing and gives back each secret; import reads the file
    /// back, and reads a backquote escaped by hand too.
    @Test(arguments: CLIBackend.allCases)
    func anExportedEnvFileRunsNothingWhenSourcedAndImportsBack(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let secrets = [
                "backquote": "pa`touch PWNED-1`ss", "dollar": "a$(touch PWNED-2)b${HOME}",
                "quotes": #"say "hi" \ it's \`x\`"#, "lines": "one\ntwo\r\n`touch PWNED-3`",
            ]
            for (key, secret) in secrets {
                #expect(try cli(["-s", s, "set", key, "--raw"], input: secret).status == 0)
            }
            let exported = try cli(["-s", s, "export", "--format", "env", "--yes"])
            #expect(exported.status == 0, "\(exported.stderr)")
            try exported.stdout.write(to: URL(fileURLWithPath: scratch.path("app.env")))
            let sourced = try shell(
                #"set -a; . ./app.env; printf '%s\0' "$BACKQUOTE" "$DOLLAR" "$QUOTES""#, directory: scratch.path(""))
            #expect(sourced.status == 0, "\(sourced.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: scratch.path(""))
            #expect(!files.contains { $0.hasPrefix("PWNED") }, "sourcing ran a command: \(files)")
            #expect(
                Array(sourced.stdoutText.split(separator: "\0", omittingEmptySubsequences: false).prefix(3))
                    == [secrets["backquote"]!, secrets["dollar"]!, secrets["quotes"]!].map { Substring($0) })
            let copy = uniqueService()
            let imported = try cli(["-s", copy, "import", scratch.path("app.env")])
            #expect(imported.stdoutText == "added 4, replaced 0, skipped 0\n", "\(imported.stderr)")
            for (key, secret) in secrets {
                let name = key.uppercased()
                #expect(try cli(["-s", copy, "get", name]).stdout == Data(secret.utf8), "\(name)")
            }
            let byHand = try cli(["-s", copy, "import", "--overwrite"], input: #"HAND="a\`b\$c""# + "\n")
            #expect(byHand.status == 0, "\(byHand.stderr)")
            #expect(try cli(["-s", copy, "get", "HAND"]).stdoutText == "a`b$c")
        }
    }

    /// The variables docs/commands.md#environment says exec and `serve -- COMMAND` keep from the
    /// command: passphrases, the identity descriptor, the OpenBao token and login secrets.
    static let withheld = [
        "KEYCHAIN_PASSPHRASE", "KEYCHAIN_NEW_PASSPHRASE", "KEYCHAIN_IDENTITY_FD", "BAO_TOKEN", "VAULT_TOKEN",
        "KEYCHAIN_OPENBAO_SECRET_ID", "KEYCHAIN_OPENBAO_JWT",
    ]

    @Test(arguments: CLIBackend.allCases)
    func execAndServePassNoPassphraseOrTokenVariableOn(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            #expect(try cli(["-s", s, "set", "k"], input: "v").status == 0)
            let shown = Self.withheld.map { "${\($0)-unset}" }.joined(separator: "|")
            let script = #"printf '%s|'"# + " \"$K\" \"" + shown + "\""
            // Set where the backend does not use them (a token the server would refuse, an
            // identity descriptor that is not open); BAO_TOKEN is the OpenBao backend's own.
            var extra: [String: String] = [
                "KEYCHAIN_NEW_PASSPHRASE": "the new one", "VAULT_TOKEN": "vault-token",
                "KEYCHAIN_OPENBAO_SECRET_ID": "secret-id", "KEYCHAIN_OPENBAO_JWT": "jwt",
            ]
            if !backend.isVault { extra["KEYCHAIN_PASSPHRASE"] = "the old one" }
            if backend != .openbao { extra["BAO_TOKEN"] = "bao-token" }
            let unset = Array(repeating: "unset", count: Self.withheld.count).joined(separator: "|")
            let result = try cli(["-s", s, "exec", "--env", "K=k", "--", "sh", "-c", script], extra: extra)
            #expect(result.stdoutText == "v|" + unset + "|", "\(result.stderr)")
            // A command that needs one maps it from the keychain.
            let mapped = try cli(
                ["-s", s, "exec", "--env", "BAO_TOKEN=k", "--", "sh", "-c", #"printf %s "$BAO_TOKEN""#], extra: extra)
            #expect(mapped.stdoutText == "v", "\(mapped.stderr)")
            if backend != .secretService {
                let served = try cli(["serve", "--", "sh", "-c", script], extra: extra.merging(["K": "v"]) { $1 })
                #expect(served.stdoutText == "v|" + unset + "|", "\(served.stderr)")
            }
        }
    }
}
