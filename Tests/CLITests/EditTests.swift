import Foundation
import TestSupport
import Testing

/// A private runtime directory (0700, on /dev/shm's tmpfs) standing for `$XDG_RUNTIME_DIR`, so
/// that a test sees what `edit` leaves there, and nothing of another test's.
struct EditRuntime {
    let path = "/dev/shm/kc-edit-\(UUID())"

    init() throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        chmod(path, 0o700)
    }

    /// What `edit` left here (nothing, but a kept edit after a conflict).
    var leftovers: [String] { (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] }

    func remove() { _ = try? runProcess("/bin/rm", ["-rf", path], environment: [:]) }

    /// Runs `body` on `backend` with a new runtime directory and a new service that holds
    /// `secret` under `key`, exactly; the directory is removed afterwards.
    static func with(
        _ key: String, holding secret: String, on backend: CLIBackend = .vault,
        _ body: (EditRuntime, String) throws -> Void
    ) throws {
        let runtime = try EditRuntime()
        defer { runtime.remove() }
        try backend.run {
            let service = uniqueService("edit")
            let stored = try cli(["-s", service, "set", "--raw", "--", key], input: secret)
            try #require(stored.status == 0, "\(stored.stderr)")
            try body(runtime, service)
        }
    }

    /// Runs `keychain-cli -s SERVICE edit KEY` with `editor` as $EDITOR (and $VISUAL blank).
    func edit(_ service: String, _ key: String, editor: String, extra: [String: String] = [:]) throws
        -> ProcessResult
    {
        // The editor gets none of keychain-cli's secrets: a writer it starts is given them as
        // $KP (the vault's passphrase) and $KT (the OpenBao token).
        let secrets = cliEnvironment()
        var environment = [
            "XDG_RUNTIME_DIR": path, "EDITOR": editor, "VISUAL": "", "KC": keychainCLIPath, "S": service,
            "KP": secrets["KEYCHAIN_PASSPHRASE"] ?? "", "KT": secrets["BAO_TOKEN"] ?? "",
        ]
        environment.merge(extra) { _, new in new }
        return try cli(["-s", service, "edit", "--", key], extra: environment)
    }
}

/// `edit KEY` with editors driven by a script (`sed -i`, shell functions): stored when changed,
/// on every backend; nothing stored when unchanged, empty, or when the editor fails; a binary or
/// missing secret refused before the editor runs; another writer's change never overwritten.
@Suite("edit: a secret in $EDITOR", .keyringSession)
struct EditTests {
    static let entry = "pw-edit-secret\nusername: bob\nurl: https://example.com\n\nmy notes\nline 2"

    /// sed edits one field of an entry; the other lines, the notes, and the missing final
    /// newline are kept; the file is gone afterwards.
    @Test(arguments: CLIBackend.allCases)
    func aScriptedEditorChangesOneFieldOnEveryBackend(on backend: CLIBackend) throws {
        try EditRuntime.with("Dev/github", holding: Self.entry, on: backend) { runtime, s in
            let edited = try runtime.edit(s, "Dev/github", editor: "sed -i s/^username:\\ bob$/username:\\ alice/")
            #expect(edited.status == 0 && edited.stderr.contains("stored the edited secret 'Dev/github'"))
            let stored = try cli(["-s", s, "get", "Dev/github", "--raw"]).stdoutText
            #expect(stored == Self.entry.replacingOccurrences(of: "bob", with: "alice"))
            #expect(try cli(["-s", s, "get", "Dev/github", "--field", "username"]).stdoutText == "alice")
            #expect(runtime.leftovers.isEmpty, "\(runtime.leftovers)")
        }
    }

    /// The newline an editor adds at the end is dropped when the secret had none, and kept when it
    /// had one; CRLF lines stay CRLF.
    @Test func theFinalNewlineFollowsTheSecret() throws {
        let append = "f() { printf 'x\\n' >> \"$1\"; }; f"
        try EditRuntime.with("plain", holding: "abc") { runtime, s in
            let edited = try runtime.edit(s, "plain", editor: append)
            #expect(edited.status == 0, "\(edited.stderr)")
            #expect(try cli(["-s", s, "get", "plain", "--raw"]).stdoutText == "abcx")
            #expect(try cli(["-s", s, "set", "--raw", "lines"], input: "a\r\nb\n").status == 0)
            #expect(try runtime.edit(s, "lines", editor: append).status == 0)
            #expect(try cli(["-s", s, "get", "lines", "--raw"]).stdoutText == "a\r\nb\nx\n")
        }
    }

    /// Unchanged (or only a final newline added), empty, a failing editor, an editor not found:
    /// nothing is stored, each says so with its code.
    @Test func nothingIsStoredUnlessTheEditorSucceedsWithAChange() throws {
        try EditRuntime.with("k", holding: "v1") { runtime, s in
            let unchanged = try runtime.edit(s, "k", editor: #"f() { echo >> "$1"; }; f"#)
            #expect(unchanged.status == 0 && unchanged.stderr.contains("'k' is unchanged; nothing was stored"))
            let empty = try runtime.edit(s, "k", editor: "truncate -s 0")
            #expect(empty.status == 65 && empty.stderr.contains("empty; nothing was stored"), "\(empty.stderr)")
            let failed = try runtime.edit(s, "k", editor: #"f() { echo v2 > "$1"; exit 3; }; f"#)
            #expect(failed.status == 1 && failed.stderr.contains("exited with status 3; nothing was stored"))
            let killed = try runtime.edit(s, "k", editor: #"f() { echo v2 > "$1"; kill -TERM $$; }; f"#)
            #expect(killed.status == 1 && killed.stderr.contains("ended by signal 15"), "\(killed.stderr)")
            let missing = try runtime.edit(s, "k", editor: "no-such-editor-kc")
            #expect(missing.status == 127 && missing.stderr.contains("cannot find the editor 'no-such-editor-kc'"))
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v1")
            #expect(runtime.leftovers.isEmpty, "\(runtime.leftovers)")
        }
    }

    /// A binary secret (65) and a missing one (1, naming set) are refused before the editor
    /// runs: the editor would have left a mark.
    @Test func binaryAndMissingSecretsAreRefusedBeforeTheEditorRuns() throws {
        let mark = FileManager.default.temporaryDirectory.appendingPathComponent("kc-edit-ran-\(UUID())").path
        defer { unlink(mark) }
        try EditRuntime.with("text", holding: "text") { runtime, s in
            for bytes in [[0xFF, 0xFE], [0x61, 0x00, 0x62]] as [[UInt8]] {
                #expect(try cli(["-s", s, "set", "--raw", "bin"], stdin: Data(bytes)).status == 0)
                let binary = try runtime.edit(s, "bin", editor: "touch \(mark)")
                #expect(binary.status == 65 && binary.stderr.contains("binary"), "\(binary.stderr)")
                #expect(try cli(["-s", s, "get", "--raw", "bin"]).stdout == Data(bytes))
            }
            let missing = try runtime.edit(s, "nope", editor: "touch \(mark)")
            #expect(missing.status == 1 && missing.stderr.contains("set -- nope"), "\(missing.stderr)")
            #expect(!FileManager.default.fileExists(atPath: mark))
        }
    }

    /// Another writer changes (or removes) the secret while the editor is open: 75, their
    /// change kept, the user's edit in a 0600 file of the runtime directory that the message
    /// names, and the command it gives stores it.
    @Test(arguments: CLIBackend.allCases)
    func anotherWritersChangeIsNeverOverwritten(on backend: CLIBackend) throws {
        try EditRuntime.with("k", holding: "original", on: backend) { runtime, s in
            let racing =
                #"f() { printf mine > "$1"; printf theirs | KEYCHAIN_PASSPHRASE="$KP" BAO_TOKEN="$KT" "$KC" -s "$S" set k; }; f"#
            let changed = try runtime.edit(s, "k", editor: racing)
            #expect(changed.status == 75 && changed.stderr.contains("'k' was changed by another program"))
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "theirs")
            let kept = try #require(runtime.leftovers.first { $0.hasPrefix("keychain-cli-edit-kept.") })
            let path = "\(runtime.path)/\(kept)"
            #expect(runtime.leftovers.count == 1 && changed.stderr.contains(path))
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
            var info = stat()
            #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
            // The command the message gives, as a user would paste it.
            let line = try #require(changed.stderr.firstMatch(of: /with: (.*); or drop it/)?.output.1)
            let pasted = try runProcess(
                "/bin/sh", ["-c", "PATH=\"${KC%/*}:$PATH\"; " + line],
                environment: cliEnvironment().merging(["KC": keychainCLIPath]) { _, new in new })
            #expect(pasted.status == 0, "\(pasted.stderr)")
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "mine" && runtime.leftovers.isEmpty)

            let removing =
                #"f() { printf again > "$1"; KEYCHAIN_PASSPHRASE="$KP" BAO_TOKEN="$KT" "$KC" -s "$S" delete k; }; f"#
            let removed = try runtime.edit(s, "k", editor: removing)
            #expect(removed.status == 75 && removed.stderr.contains("'k' was removed by another program"))
            #expect(try cli(["-s", s, "get", "k"]).status == 1 && runtime.leftovers.count == 1)
        }
    }

    /// Without a tmpfs `$XDG_RUNTIME_DIR`, nothing is written anywhere (74), before the editor
    /// runs; /dev/shm is no fallback.
    @Test func withoutATmpfsRuntimeDirectoryItIsRefused() throws {
        let scratch = try ScratchDirectory("edit-disk")
        defer { scratch.remove() }
        try CLIBackend.withVault { _ in
            let s = uniqueService("edit")
            #expect(try cli(["-s", s, "set", "k"], input: "v1").status == 0)
            for (runtime, reason) in [("", "not set"), (scratch.url.path, "not one")] {
                let result = try cli(
                    ["-s", s, "edit", "k"], extra: ["XDG_RUNTIME_DIR": runtime, "EDITOR": "sed -i s/v1/v2/"])
                #expect(
                    result.status == 74 && result.stderr.contains("it is \(reason)"), "\(runtime): \(result.stderr)")
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).isEmpty)
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v1")
        }
    }

    /// The editor is given none of keychain-cli's own secrets (the vault's passphrase, the
    /// OpenBao token), as exec's command is not: it sees the rest of the environment.
    @Test(arguments: [CLIBackend.vault, .openbao])
    func theEditorGetsNoneOfOurSecrets(on backend: CLIBackend) throws {
        try EditRuntime.with("k", holding: "v1", on: backend) { runtime, s in
            let seen = try ScratchDirectory("edit-env")
            defer { seen.remove() }
            let editor = #"f() { env > "$OUT"; printf v2 > "$1"; }; f"#
            let edited = try runtime.edit(s, "k", editor: editor, extra: ["OUT": seen.path("env"), "MARK": "here"])
            #expect(edited.status == 0, "\(edited.stderr)")
            let environment = try String(contentsOfFile: seen.path("env"), encoding: .utf8)
            #expect(environment.contains("MARK=here"))
            for name in ["KEYCHAIN_PASSPHRASE=", "BAO_TOKEN="] {
                #expect(!environment.split(separator: "\n").contains { $0.hasPrefix(name) }, "\(name)")
            }
            #expect(try cli(["-s", s, "get", "k"]).stdoutText == "v2")
        }
    }
}
