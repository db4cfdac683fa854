import Foundation
import TestSupport
import Testing

/// Inputs of the wrong kind: a value where a key or mapping goes is refused or named by its shape,
/// never repeated; an import file that other tools would read otherwise is refused whole.
@Suite("inputs: values where keys go, repeated JSON fields, empty secrets", .keyringSession)
final class InputShapeTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("inputs") }
    deinit { scratch.remove() }

    private let token = "ghp_" + "R3alLook1ngT0kenValue0123456789abcd"

    /// Values given in `--env`: 64, the words that say why, and the value nowhere. (Our own
    /// `export --format env` fed to `exec --env-file` is a .env file now: its values are literals,
    /// passed on as they are, and one that looks like a token is warned of without repeating it.)
    @Test func aMappingThatHoldsAValueIsRefusedWithoutRepeatingIt() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db-password"], input: "hunter2-the-value")
            let exported = try cli(["-s", s, "export", "--yes", "--format", "env"])
            #expect(exported.stdoutText == "DB_PASSWORD=\"hunter2-the-value\"\n")
            let file = scratch.path("values.env")
            try exported.stdout.write(to: URL(fileURLWithPath: file))
            let literal = try cli(["-s", s, "exec", "--env-file", file, "--", "sh", "-c", #"printf %s "$DB_PASSWORD""#])
            #expect(literal.status == 0, "\(literal.stderr)")
            #expect(literal.stdoutText == "hunter2-the-value", "a literal is passed on as it is, unmasked")
            let tokenFile = scratch.path("token.env")
            try "GH=\"\(token)\"\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            let warned = try cli(["-s", s, "exec", "--env-file", tokenFile, "--", "true"])
            #expect(warned.status == 0)
            #expect(warned.stderr.contains("GH is given a GitHub token as a literal value"), "\(warned.stderr)")
            #expect(!warned.stderr.contains(String(token.dropFirst(4))))
            let cases: [([String], String)] = [
                (["--env", "GH=\(token)"], "GH is given a GitHub token, not a key"),
                (["--env", "GH=\"hunter2-the-value\""], "is given a quoted value"),
                (["--env", "GH='hunter2-the-value'"], "is given a quoted value"),
                (["--env", token], "--env: expected NAME=KEY"),
                (["--env", "GH=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"], "GH is given a JSON web token"),
                // Anywhere in the target: as the service, after a /, after a word.
                (["--env", "X=\(token)/db"], "X is given a GitHub token"),
                (["--env", "X=app/\(token)/x"], "X is given a GitHub token"),
                (["--env", "X=Bearer \(token)"], "X is given a GitHub token"),
                (["--env", "X=https://u:\(token)@github.com"], "X is given a GitHub token"),
            ]
            for (arguments, words) in cases {
                let result = try cli(["-s", s, "exec"] + arguments + ["--", "true"])
                #expect(result.status == 64, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
                for secret in ["hunter2", String(token.dropFirst(4)), "eyJhbGciOiJIUzI1NiJ9"] {
                    #expect(!result.stderr.contains(secret), "\(arguments): \(result.stderr)")
                }
            }
        }
    }

    /// `get "$TOKEN"`, and a template that names a token: not found (1), named by its shape.
    @Test func aKeyThatLooksLikeASecretIsNotRepeated() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "present"], input: "p")
            let got = try cli(["-s", s, "get", token])
            #expect(got.status == 1)
            #expect(got.stderr.contains("(a value that is not shown: a GitHub token, not a key name)"), "\(got.stderr)")
            let injected = try cli(["inject"], input: "{{ keychain://\(s)/\(token) }}")
            #expect(injected.status == 1)
            #expect(injected.stderr.contains("a GitHub token"), "\(injected.stderr)")
            for result in [got, injected] { #expect(!result.stderr.contains(token)) }
            // The same token as a service, a whole reference, an unclosed one, an encoding.
            let elsewhere = [
                try cli(["-s", token, "get", "k"]), try cli(["inject"], input: "{{ keychain://\(token) }}"),
                try cli(["inject"], input: "{{ keychain://\(s)/\(token)\n"),
                try cli(
                    ["import"],
                    input: #"{"format":"keychain-cli-export","version":1,"items":[{"service":"a","key":"k","#
                        + #""encoding":"\#(token)","secret":"utf8"}]}"#),
            ]
            for (index, result) in elsewhere.enumerated() {
                #expect(result.status != 0)
                #expect(!result.stderr.contains(token.dropFirst(4)), "\(result.stderr)")
                // A malformed reference's message names its place only, never what it holds.
                let isReference = index == 1 || index == 2
                #expect(result.stderr.contains(isReference ? " reference" : "GitHub token"), "\(result.stderr)")
            }
            // A name-shaped part of a reference, the name of --from-env, a command, docker's action.
            let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
            let aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
            for result in [
                try cli(["inject"], input: "{{ keychain://\(s)/\(uuid)\n"),
                try cli(["inject"], input: "{{ keychain://\(aws)\n"),
                try cli(["inject"], input: "{{ keychain://\(uuid) }}"),
                try cli(["-s", s, "set", "k", "--from-env", token]),
                try cli([token]), try cli(["help", token]), try cli(["docker-credential", token]),
                try cli(["vault", "recipients", "add", "ssh-ed25519 \(token)"]),
            ] {
                #expect(result.status != 0)
                for value in [token, uuid, aws] {
                    #expect(
                        !(result.stderr + result.stdoutText).contains(value), "\(result.stderr)\(result.stdoutText)")
                }
            }
            // Other services' token families, and an AWS secret access key (no prefix, 40 characters).
            for value in [
                "glrt-0123456789abcdefghij", "xapp-1-A0123456789-0123456789", "sk-ant-api03-0123456789abcdefgh",
                "AIzaSyA0123456789abcdefghijklmnopqrstu", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
            ] {
                let result = try cli(["-s", s, "get", value])
                #expect(result.status == 1)
                #expect(!result.stderr.contains(value) && result.stderr.contains("not shown"), "\(result.stderr)")
            }
            // A plain key is still named, with the command that stores it.
            let plain = try cli(["inject"], input: "{{ keychain://\(s)/absent }}")
            #expect(plain.stderr.contains("no secret named 'absent'"))
            #expect(plain.stderr.contains("set absent"), "\(plain.stderr)")
        }
    }

    /// `"service":"prod","service":"test"`: Foundation's decoder read the first, python and jq the
    /// last. Refused, naming the item and field, and nothing stored.
    @Test func aJSONFieldGivenTwiceIsRefusedAndNothingStored() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let document = """
                {"format": "keychain-cli-export", "version": 1, "items": [
                  {"service": "\(s)", "key": "first", "encoding": "utf8", "secret": "one"},
                  {"service": "\(s)-prod", "key": "db", "encoding": "utf8", "secret": "two", "\\u0073ervice": "\(s)"}
                ]}
                """
            let result = try cli(["import"], input: document)
            #expect(result.status == 65)
            #expect(
                result.stderr.contains("item 2 has the field 'service' twice; nothing was stored"), "\(result.stderr)")
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
            #expect(try cli(["-s", "\(s)-prod", "list"]).stdoutText.isEmpty)
        }
    }

    /// What the attack found without a next step: a JSON slip, an unknown format, empty input.
    @Test func importMessagesSayWhatToDoNext() throws {
        try CLIBackend.withVault { _ in
            let slip = try cli(["import"], input: #"{"format":"keychain-cli-export","version":1 "items":[]}"#)
            #expect(slip.status == 65)
            #expect(slip.stderr.contains("python3 -m json.tool FILE"), "\(slip.stderr)")
            let other = try cli(["import"], input: #"{"format":"x","version":1,"items":[]}"#)
            #expect(other.status == 65)
            #expect(other.stderr.contains("Export it again with this version"), "\(other.stderr)")
            // `export | import` where the export failed: nothing, not "added 0".
            for input in ["", " \n"] {
                let empty = try cli(["import"], input: input)
                #expect(empty.status == 65)
                #expect(empty.stderr.contains("is empty; nothing was stored"), "\(empty.stderr)")
            }
        }
    }

    /// `F=` in a .env is usually an unset variable: refused as set refuses it, stored with
    /// --allow-empty, on every backend.
    @Test(arguments: CLIBackend.allCases)
    func anEmptySecretIsImportedOnlyWhenAllowed(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let refused = try cli(["-s", s, "import", "--format", "env"], input: "FULL=x\nEMPTY=\n")
            #expect(refused.status == 65)
            #expect(
                refused.stderr.contains("the secret of \(s)/EMPTY is empty; nothing was stored"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-empty"))
            #expect(try cli(["-s", s, "list"]).stdoutText.isEmpty)
            // An item named like a secret (its key and secret swapped) is not named.
            let swapped = try cli(["-s", s, "import", "--format", "env"], input: "\(token)=\n")
            #expect(swapped.status == 65 && !swapped.stderr.contains(token), "\(swapped.stderr)")
            let allowed = try cli(["-s", s, "import", "--allow-empty"], input: "FULL=x\nEMPTY=\n")
            #expect(allowed.stdoutText == "added 2, replaced 0, skipped 0\n", "\(allowed.stderr)")
            let empty = try cli(["-s", s, "get", "EMPTY"])
            #expect(empty.status == 0 && empty.stdout.isEmpty)
        }
    }
}
