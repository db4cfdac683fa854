import Foundation
import TestSupport
import Testing

@Suite("The fast path gives the argument parser's results", .keyringSession)
struct FastPathTests {
    /// Runs `arguments` with and without the fast path and expects identical results.
    private func expectSameBothWays(_ arguments: [String], stdin: Data? = nil) throws {
        let fast = try cli(arguments, stdin: stdin)
        let parsed = try cli(arguments, stdin: stdin, extra: ["KEYCHAIN_CLI_NO_FAST_PATH": "1"])
        #expect(fast.status == parsed.status, "\(arguments)")
        #expect(fast.stdout == parsed.stdout, "\(arguments)")
        #expect(fast.stderr == parsed.stderr, "\(arguments)")
    }

    @Test(arguments: CLIBackend.allCases)
    func getFormsAgree(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "k"], input: "value")
            _ = try cli(["-s", s, "set", "bin", "--raw"], stdin: Data([0, 255, 10]))
            for arguments in [
                ["-s", s, "get", "k"], ["get", "k", "-s", s], ["get", "-s", s, "k"],
                ["--service", s, "get", "k", "-n"], ["-s", s, "get", "--no-newline", "k"],
                ["-s", s, "get", "k", "--newline"], ["-s", s, "get", "k", "--raw"], ["-s", s, "get", "k", "--json"],
                ["-s", s, "get", "bin"], ["-s", s, "get", "bin", "--json"], ["-s", s, "--timeout", "7.5", "get", "k"],
                ["-s", s, "get", "missing"], ["-s", s, "get", "bad\u{7}key"], ["-s", "", "get", "k"],
                ["-s", s, "get", "k", "-n", "--json"], ["-s", s, "get", "k", "-n", "-n"],
                ["-s", s, "--timeout", "0", "get", "k"],
                ["-s", s, "--timeout", "nan", "get", "k"], ["-s", s, "get"], ["-s", s, "get", "k", "extra"],
                // A get flag before the command's name is the parser's error, not a get.
                ["-s", s, "--json", "get", "k"], ["-s", s, "-n", "get", "k"], ["--raw", "-s", s, "get", "k"],
                ["-s", s, "--newline", "get", "k"],
            ] {
                try expectSameBothWays(arguments)
            }
            #expect(try cli(["get", "k"], extra: ["KEYCHAIN_SERVICE": s]).stdoutText == "value")
        }
    }

    /// Every variable of ours and of the Secret Service reads empty as unset (docs/commands.md,
    /// Environment): an empty bus name is the default one, not a name no service owns.
    @Test func emptyVariablesReadAsUnset() throws {
        let s = uniqueService()
        let empty = [
            "KEYCHAIN_TIMEOUT": "", "KEYCHAIN_BACKEND": "", "SECRET_SERVICE_BUS_NAME": "", "KEYCHAIN_VAULT": "",
            "KEYCHAIN_IDENTITY": "", "KEYCHAIN_IDENTITY_FD": "",
        ]
        for fastPath in ["", "1"] {
            let extra = empty.merging(["KEYCHAIN_SERVICE": s, "KEYCHAIN_CLI_NO_FAST_PATH": fastPath]) { $1 }
            let set = try cli(["set", "k"], stdin: Data("value \(fastPath)".utf8), extra: extra)
            #expect(set.status == 0, "\(set.stderr)")
            let get = try cli(["get", "k"], extra: extra)
            #expect(get.status == 0 && get.stdoutText == "value \(fastPath)", "\(get.stderr)")
        }
        // The default service, which has no such key.
        let blank = try cli(["get", "k-\(s)"], extra: ["KEYCHAIN_SERVICE": ""])
        #expect(blank.status == 1, "\(blank.stderr)")
    }

    /// `--version` alone is answered without the parser, as it answers; with anything else it
    /// goes to the parser.
    @Test func versionAgrees() throws {
        for arguments in [["--version"], ["--version", "--version"], ["-s", "x", "--version"], ["get", "--version"]] {
            try expectSameBothWays(arguments)
        }
        #expect(try cli(["--version"]).stdoutText.split(separator: ".").count == 3)
    }

    /// The backend's options as flags take the fast path too; odd forms fall back to the parser,
    /// whose errors both ways must match.
    @Test func vaultFlagFormsAgree() throws {
        let directory = try ScratchDirectory("fast-vault")
        defer { directory.remove() }
        let (team, vault) = (directory.path("team.age"), directory.path("pw.age"))
        let (identity, passphrase) = (directory.path("id.txt"), directory.path("passphrase"))
        try Data("pw\n".utf8).write(to: URL(fileURLWithPath: passphrase))
        let recipient = try cli(["vault", "keygen", "-o", identity], session: nil).stdoutText
            .trimmingCharacters(in: .newlines)
        #expect(try cli(["--vault", team, "vault", "recipients", "add", recipient], session: nil).status == 0)
        let onTeam = ["--vault", team, "--identity", identity]
        let onVault = ["--backend", "vault", "--vault", vault, "--passphrase-file", passphrase]
        #expect(try cli(onTeam + ["-s", "f", "set", "k"], stdin: Data("team".utf8), session: nil).status == 0)
        #expect(
            try cli(onVault + ["-s", "f", "set", "k"], stdin: Data("pw".utf8), session: nil, extra: workFactor).status
                == 0)
        for arguments in [
            onTeam + ["-s", "f", "get", "k"], ["-s", "f", "get", "k"] + onTeam,
            onVault + ["-s", "f", "get", "k", "-n"],
            ["--backend", "vault", "--vault", team, "--identity", identity, "-s", "f", "get", "missing"],
            onTeam + ["--identity", identity, "-s", "f", "get", "k"], onTeam + ["--identity-fd", "0", "get", "k"],
            onVault + ["--passphrase-fd", "0", "get", "k"], ["--vault", "", "get", "k"],
            ["--backend", "secret-service", "--vault", team, "get", "k"], ["--backend", "nope", "get", "k"],
            ["--vault", team, "--identity", directory.path("none"), "-s", "f", "get", "k"],
            ["--vault", team, "--passphrase-fd", "-1", "get", "k"],
        ] {
            let fast = try cli(arguments, session: nil, extra: workFactor)
            let parsed = try cli(
                arguments, session: nil, extra: workFactor.merging(["KEYCHAIN_CLI_NO_FAST_PATH": "1"]) { $1 })
            #expect(fast.status == parsed.status && fast.stdout == parsed.stdout, "\(arguments)")
            #expect(fast.stderr == parsed.stderr, "\(arguments)")
        }
        #expect(try cli(onTeam + ["-s", "f", "get", "k"], session: nil).stdoutText == "team")
    }

    private let workFactor = ["KEYCHAIN_VAULT_WORK_FACTOR": "10"]

    @Test(arguments: CLIBackend.allCases)
    func setFormsAgree(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            for (arguments, input) in [
                (["-s", s, "set", "k"], "v\n"), (["set", "k", "-s", s, "--raw"], "v\n"), (["-s", s, "set", "e"], ""),
                (["-s", s, "set", "e", "--allow-empty"], ""), (["-s", s, "set", "k", "value-on-argv"], "v"),
                (["-s", s, "set", "bad\u{1b}", "--raw"], "v"),
                // set's flags before its name: the parser's error, and nothing stored.
                (["-s", s, "--raw", "set", "k2"], "v"), (["--allow-empty", "-s", s, "set", "k2"], ""),
            ] {
                try expectSameBothWays(arguments, stdin: Data(input.utf8))
            }
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v\n")
            #expect(try cli(["-s", s, "get", "k2"]).status == 1, "a set refused both ways stored nothing")
        }
    }
}
