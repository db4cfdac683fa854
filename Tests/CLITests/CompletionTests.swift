import Foundation
import Testing

@testable import TestSupport

/// Completion of key names and file names, through the scripts keychain-cli generates for bash
/// and fish, run by the real shells.
@Suite("Shell completion", .keyringSession)
struct CompletionTests {
    /// What bash offers for `words` (the last one being completed), one candidate a line.
    static func bash(_ words: [String]) throws -> [String] {
        let scratch = try ScratchDirectory("completion")
        defer { scratch.remove() }
        let script = scratch.path("completion.bash")
        let generated = try cli(["--generate-completion-script", "bash"])
        try generated.stdout.write(to: URL(fileURLWithPath: script))
        try FileManager.default.createSymbolicLink(
            atPath: scratch.path("keychain-cli"), withDestinationPath: keychainCLIPath)
        let driver = #"""
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            COMPREPLY=()
            _keychain-cli keychain-cli "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            printf '%s\n' "${COMPREPLY[@]}"
            """#
        var environment = cliEnvironment()
        environment["PATH"] = scratch.url.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let result = try runProcess(
            "/bin/bash", ["-c", driver, "bash", script] + words, environment: environment, timeout: 20)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdoutText.split(separator: "\n").map(String.init)
    }

    @Test(arguments: CLIBackend.allCases)
    func bashOffersTheKeysOfTheServiceOnTheLine(on backend: CLIBackend) throws {
        try backend.run {
            let s = uniqueService()
            let other = uniqueService()
            for key in ["github-token", "gitlab-token", "npm", "it's", "$(touch PWNED)", "--looks-like-an-option"] {
                #expect(try cli(["-s", s, "set", "--", key], input: "v").status == 0)
            }
            _ = try cli(["-s", other, "set", "ci-key"], input: "v")
            #expect(try Self.bash(["keychain-cli", "-s", s, "get", "gi"]) == ["github-token", "gitlab-token"])
            #expect(try Self.bash(["keychain-cli", "otp", "--service", other, ""]) == ["ci-key"])
            #expect(try Self.bash(["keychain-cli", "--service=\(other)", "delete", ""]) == ["ci-key"])
            #expect(try Self.bash(["keychain-cli", "-s", "'\(other)'", "generate", ""]) == ["ci-key"])
            // Offered quoted as bash inserts them, never run; an option-like key is left out.
            let all = try Self.bash(["keychain-cli", "-s", s, "set", ""])
            #expect(all == [#"\$\(touch\ PWNED\)"#, "github-token", "gitlab-token", #"it\'s"#, "npm"])
            #expect(!FileManager.default.fileExists(atPath: "PWNED"))
        }
    }

    /// What an interactive bash runs after `keychain-cli get TYPED` is completed by Tab and
    /// Enter is pressed: the words its command got, as `printf` shows them.
    static func interactiveBash(completing typed: String, in scratch: ScratchDirectory) throws -> [String] {
        let script = scratch.path("completion.bash")
        try cli(["--generate-completion-script", "bash"]).stdout.write(to: URL(fileURLWithPath: script))
        if !FileManager.default.fileExists(atPath: scratch.path("keychain-cli")) {
            try FileManager.default.createSymbolicLink(
                atPath: scratch.path("keychain-cli"), withDestinationPath: keychainCLIPath)
        }
        // Tab, then (at the start of the completed line) a printf that shows each word: typed
        // ahead, read by readline only once the completion has ended (which reads no input).
        let result = try expect(
            """
            set timeout 20
            spawn env PATH=\(scratch.url.path):$env(PATH) INPUTRC=/dev/null PS1=>>\\  /bin/bash --norc --noprofile -i
            expect ">> "
            send "cd \(scratch.url.path); source \(script); bind 'set enable-bracketed-paste off'\r"
            expect ">> "
            send "keychain-cli get \(tclQuoted(typed))\t"
            send "\\x01printf 'WORD<%s>\\\\n' \\r"
            expect ">> "
            send "exit\\r"
            expect eof
            """)
        // A terminal ends lines with CR LF: one Character in Swift.
        return result.stdoutText.split(whereSeparator: \.isNewline).compactMap { line in
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.hasPrefix("WORD<"), text.hasSuffix(">"), !text.contains("%s") else { return nil }
            return String(text.dropFirst(5).dropLast())
        }
    }

    /// `text` as it must be written inside a Tcl "…" string.
    static func tclQuoted(_ text: String) -> String {
        text.reduce(into: "") { result, character in
            if "\\\"$[]".contains(character) { result.append("\\") }
            result.append(character)
        }
    }

    /// The key bash inserts is the key, whatever it holds: `$` and `` ` `` are not expanded
    /// (bash's own filename quoting leaves them bare when no file has that name).
    @Test func bashInsertsAKeyQuotedSoThatNothingInItRuns() throws {
        try CLIBackend.vault.run {
            let keys = ["A$HOME", "Bq`touch PWNED`z", "C'x $(touch PWNED)", "D{a,b}*;~#&", #"E\"q\\"#]
            for key in keys {
                #expect(try cli(["set", "--", key], input: "v").status == 0)
            }
            let scratch = try ScratchDirectory("completion")
            defer { scratch.remove() }
            for key in keys {
                let words = try Self.interactiveBash(completing: String(key.prefix(1)), in: scratch)
                #expect(words == ["keychain-cli", "get", key], "\(key)")
            }
            #expect(!FileManager.default.fileExists(atPath: scratch.path("PWNED")))
            // Begun quoted, in any of bash's three ways, the key is completed in that quoting.
            for (typed, key) in [(#"A\$"#, 0), ("'A", 0), (#""A"#, 0), ("'B", 1), (#""B"#, 1), (#""E"#, 4)] {
                let words = try Self.interactiveBash(completing: typed, in: scratch)
                #expect(words == ["keychain-cli", "get", keys[key]], "\(typed)")
            }
        }
    }

    /// No prompt, no message, no wait beyond about two seconds, whatever the backend does.
    @Test func completionIsSilentAndBoundedWhenTheBackendCannotAnswer() throws {
        let line = ["---completion", "get", "--", "positional@0", "2", "0", "keychain-cli", "get", ""]
        let cases: [[String: String?]] = [
            ["KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": "/nonexistent/vault.age", "KEYCHAIN_PASSPHRASE": nil],
            [
                "KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": "http://10.255.255.1:8200", "BAO_TOKEN": "t",
                "KEYCHAIN_TIMEOUT": "60",
            ],
            ["KEYCHAIN_BACKEND": "secret-service", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"],
        ]
        for overrides in cases {
            // Bounded: the process timeout, 10 times completion's own 2 s, throws ProcessTimedOut
            // (the OpenBao case's KEYCHAIN_TIMEOUT is 60 s).
            let result = try CLIBackend.$overrides.withValue(overrides) { try cli(line, timeout: 20) }
            #expect(result.stdout.isEmpty && result.stderr.isEmpty, "\(overrides): \(result.stderr)")
        }
        // A vault that needs a passphrase, at a terminal: nothing asked, nothing offered.
        try CLIBackend.vault.run {
            _ = try cli(["set", "k"], input: "v")
            let result = try CLIBackend.$overrides.withValue(
                CLIBackend.overrides.merging(["KEYCHAIN_PASSPHRASE": nil]) { $1 }
            ) {
                try expect(
                    """
                    set timeout 10
                    spawn $env(KEYCHAIN_CLI) \(line.map { $0.isEmpty ? "{}" : $0 }.joined(separator: " "))
                    expect {
                        -re "assphrase" { exit 3 }
                        eof { exit 0 }
                        timeout { exit 4 }
                    }
                    """)
            }
            #expect(result.status == 0, "\(result.stdoutText)")
        }
    }

    @Test func fileOptionsCompleteFileNames() throws {
        let scratch = try ScratchDirectory("completion")
        defer { scratch.remove() }
        _ = FileManager.default.createFile(atPath: scratch.path("team-vault.age"), contents: Data())
        _ = FileManager.default.createFile(atPath: scratch.path("team-id.txt"), contents: Data())
        let prefix = scratch.path("team-v")
        for words in [
            ["keychain-cli", "--vault", prefix], ["keychain-cli", "get", "k", "--vault", prefix],
            ["keychain-cli", "import", prefix], ["keychain-cli", "export", "-o", prefix],
            ["keychain-cli", "--passphrase-file", prefix], ["keychain-cli", "--identity", prefix],
        ] {
            #expect(try Self.bash(words) == [scratch.path("team-vault.age")], "\(words)")
        }
    }

    @Test func fishOffersKeysAndZshAsksTheSameCompletion() throws {
        try CLIBackend.vault.run {
            _ = try cli(["set", "deploy-key"], input: "v")
            _ = try cli(["set", "db:password"], input: "v")
            _ = try cli(["set", "wifi!guest"], input: "v")
            let scratch = try ScratchDirectory("completion")
            defer { scratch.remove() }
            try FileManager.default.createSymbolicLink(
                atPath: scratch.path("keychain-cli"), withDestinationPath: keychainCLIPath)
            let script = scratch.path("keychain-cli.fish")
            try cli(["--generate-completion-script", "fish"]).stdout.write(to: URL(fileURLWithPath: script))
            // fish's script reads the line with `commandline`, which works only in an interactive fish.
            let fish = try expect(
                """
                set timeout 20
                spawn env PATH=\(scratch.url.path):$env(PATH) /usr/bin/fish --no-config -i
                expect "> "
                send "source \(script); complete --do-complete 'keychain-cli get d' | string join ,; echo END\\r"
                expect {
                    "db:password,deploy-key\r\nEND" { exit 0 }
                    timeout { exit 4 }
                }
                """)
            #expect(fish.status == 0, "\(fish.stdoutText)")
            // zsh's script asks keychain-cli the same way for every command taking a key.
            let zsh = try cli(["--generate-completion-script", "zsh"]).stdoutText
            for command in ["get", "set", "show", "edit", "delete", "cp", "mv", "generate", "otp"] {
                #expect(zsh.contains("---completion \(command) -- positional@0"), "\(command)")
            }
            let asZsh = CLIBackend.overrides.merging(["SAP_SHELL": "zsh"]) { $1 }
            let zshKeys = try CLIBackend.$overrides.withValue(asZsh) {
                try cli(["---completion", "get", "--", "positional@0", "2", "0", "keychain-cli", "get", ""])
            }
            // The last line is the script's own (it drops it); zsh would insert a `!` unquoted.
            #expect(zshKeys.stdoutText.split(separator: "\n").dropLast() == ["db\\:password", "deploy-key"])
        }
    }
}
