import Foundation
import TestSupport
import Testing

/// Runs `script` in bash with the test's keychain-cli environment, `$K` the binary under test and
/// the scratch directory as its working directory.
private func shell(_ script: String, in directory: ScratchDirectory) throws -> ProcessResult {
    var environment = cliEnvironment()
    environment["K"] = keychainCLIPath
    // (timeout -s KILL: the test runner starts its children with SIGTERM blocked.)
    return try runProcess(
        "/bin/bash", ["-c", "cd \"$1\" && \(script)", "bash", directory.url.path], environment: environment)
}

/// What `-o` does with what is at its path (docs/commands.md#output-files): a file is replaced
/// atomically, a FIFO or device is written into and stays what it was, the vault is never
/// overwritten, and nothing of the user's is taken for a leftover.
@Suite("-o: files replaced, devices written into, the vault and the user's files kept")
final class OutputFileTests {
    let scratch: ScratchDirectory

    init() throws { scratch = try ScratchDirectory("output") }
    deinit { scratch.remove() }

    private func path(_ name: String) -> String { scratch.path(name) }

    private func fileType(_ name: String) throws -> FileAttributeType? {
        try FileManager.default.attributesOfItem(atPath: path(name))[.type] as? FileAttributeType
    }

    @Test func aFIFOIsWrittenIntoAndStaysAFIFO() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let result = try shell(
                """
                mkfifo pipe
                timeout -s KILL 20 cat pipe > read.txt 2>&1 & reader=$!
                printf 'x={{ keychain://\(s)/db }}' | timeout -s KILL 20 "$K" inject -o pipe || exit 10
                wait $reader; [ -p pipe ] || exit 11
                printf '' | timeout -s KILL 20 "$K" -s \(s) export --yes --format env -o pipe & writer=$!
                timeout -s KILL 20 cat pipe > exported.txt 2>&1; wait $writer || exit 12
                """, in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try String(contentsOfFile: path("read.txt"), encoding: .utf8) == "x=hunter2")
            #expect(try String(contentsOfFile: path("exported.txt"), encoding: .utf8) == "DB=\"hunter2\"\n")
        }
    }

    /// /dev/null through a link always; a device node of our own (`mknod`, as root only).
    @Test func aCharacterDeviceIsWrittenIntoNeverReplaced() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            try FileManager.default.createSymbolicLink(atPath: path("null"), withDestinationPath: "/dev/null")
            #expect(try cli(["inject", "-o", path("null")], input: "{{ keychain://\(s)/db }}").status == 0)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: path("null")) == "/dev/null")
            var devices = ["null"]
            if getuid() == 0 {
                // makedev(1, 3): /dev/null's numbers.
                #expect(mknod(path("node"), S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0)
                devices.append("node")
                let exported = try cli(["-s", s, "export", "--yes", "-o", path("node")])
                #expect(exported.status == 0, "\(exported.stderr)")
                #expect(try fileType("node") == .typeCharacterSpecial)
            }
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).sorted()
            #expect(left == devices.sorted(), "no file of secrets beside them")
        }
    }

    /// /dev/stdout is the descriptor as it stands: a pipe, a file opened with >, one with >>.
    @Test func devStdoutIsTheDescriptorItself() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let result = try shell(
                """
                printf 'a={{ keychain://\(s)/db }}\\n' | "$K" inject -o /dev/stdout > new.txt || exit 10
                echo kept > appended.txt
                printf 'b={{ keychain://\(s)/db }}\\n' | "$K" inject -o /dev/fd/1 >> appended.txt || exit 11
                printf 'c={{ keychain://\(s)/db }}\\n' | "$K" inject -o /dev/stdout | cat
                """, in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutText == "c=hunter2\n")
            #expect(try String(contentsOfFile: path("new.txt"), encoding: .utf8) == "a=hunter2\n")
            #expect(try String(contentsOfFile: path("appended.txt"), encoding: .utf8) == "kept\nb=hunter2\n")
        }
    }

    /// A link of any spelling that leads to a descriptor of this process is the descriptor (a
    /// link of our own to /proc/self/fd/1 stands in for /dev/stdout, which a test must never
    /// risk replacing); a reader that goes away ends it by SIGPIPE, as on standard output.
    @Test func aLinkToADescriptorIsTheDescriptorHoweverSpelled() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let result = try shell(
                """
                ln -s /proc/self/fd/1 out && ln -s /proc/self/fd sub
                for spelling in out ./out .//out ../"${PWD##*/}"/out /proc/self/fd/./1 sub/1; do
                  printf '{{ keychain://\(s)/db }}\n' | "$K" inject -o "$spelling" >> got.txt || exit 10
                done
                [ -L out ] || exit 11
                printf '{{ keychain://\(s)/db }}%.0s' $(seq 1 20000) | "$K" inject -o out | head -c 1 >/dev/null
                echo "${PIPESTATUS[1]}"
                """, in: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(
                try String(contentsOfFile: path("got.txt"), encoding: .utf8) == String(repeating: "hunter2\n", count: 6)
            )
            #expect(result.stdoutText == "141\n", "\(result.stderr)")
        }
    }

    /// The FIFO seen is the FIFO opened: strace holds the open for 1.5 s while the path is
    /// swapped for a link to a file of the user's, or to the vault (found by an outside attack).
    @Test func aLinkSwappedInBeforeTheOpenIsNeverWrittenThrough() throws {
        try CLIBackend.withVault { vault in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let result = try shell(
                """
                printf 'mine\\n' > victim; cp "$1" vault.before
                for target in victim "$1"; do
                  rm -f out; mkfifo out
                  strace -f -o strace.log -P out -e trace=openat -e inject=openat:delay_enter=1500000 \\
                    timeout -s KILL 20 "$K" inject -o out <<< '{{ keychain://\(s)/db }}' 2>> err.txt & pid=$!
                  sleep 0.8; rm -f out; ln -s "$target" out; wait $pid; echo "status $?"
                done
                grep -c 'delay_enter\\|openat' strace.log >/dev/null || echo "strace saw no open"
                cat victim; cmp -s "$1" vault.before && echo "vault kept"
                """.replacingOccurrences(of: "\"$1\"", with: "'\(vault)'"), in: scratch)
            #expect(result.stdoutText == "status 74\nstatus 74\nmine\nvault kept\n", "\(result.stderr)")
            #expect(
                try String(contentsOfFile: path("err.txt"), encoding: .utf8).contains("changed while it was opened"))
        }
    }

    @Test func aDirectoryIsRefusedWithNothingWritten() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            try FileManager.default.createDirectory(atPath: path("dir"), withIntermediateDirectories: false)
            let result = try cli(["inject", "-o", path("dir")], input: "{{ keychain://\(s)/db }}")
            #expect(result.status == 74)
            #expect(result.stderr.contains("is a directory; nothing was written. Give -o the path of a file"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: path("dir")).isEmpty)
        }
    }

    /// A one-character typo (`-o vault.age` for `-o vault.json`) must not put the secrets in
    /// plaintext over the vault, nor over the identity that opens a team vault.
    @Test func theVaultAndItsIdentityAreNeverOverwritten() throws {
        try CLIBackend.withVault { vault in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let before = try Data(contentsOf: URL(fileURLWithPath: vault))
            let link = path("vault-link")
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: vault)
            for output in [vault, (vault as NSString).deletingLastPathComponent + "/./vault.age"] {
                let exported = try cli(["-s", s, "export", "--yes", "-o", output])
                #expect(exported.status == 64, "\(exported.stderr)")
                #expect(exported.stderr.contains("which the vault backend reads"), "\(exported.stderr)")
                let injected = try cli(["inject", "-o", output], input: "{{ keychain://\(s)/db }}")
                #expect(injected.status == 64)
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: vault)) == before)
            // A link to it is refused too: -o would replace the link itself by plaintext.
            #expect(try cli(["-s", s, "export", "--yes", "-o", link]).status == 64)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == vault)
        }
        // The vault given by a link (a dotfiles repository's), and -o naming that same link.
        let real = path("real.age")
        let linked = path("linked.age")
        try FileManager.default.createSymbolicLink(atPath: linked, withDestinationPath: real)
        try CLIBackend.$overrides.withValue(CLIBackend.vaultEnvironment(linked)) {
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let exported = try cli(["-s", s, "export", "--yes", "-o", linked])
            #expect(exported.status == 64, "\(exported.stderr)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: linked) == real)
            #expect(try cli(["-s", s, "get", "db"]).stdoutText == "hunter2")
        }
        let identity = path("identity.txt")
        #expect(try cli(["vault", "keygen", "-o", identity]).status == 0)
        let keyBefore = try Data(contentsOf: URL(fileURLWithPath: identity))
        let team = path("team.age")
        let environment: [String: String?] = [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": team, "KEYCHAIN_IDENTITY": identity,
            "KEYCHAIN_PASSPHRASE": nil, "DBUS_SESSION_BUS_ADDRESS": nil,
        ]
        try CLIBackend.$overrides.withValue(environment) {
            let exported = try cli(["export", "--yes", "-o", identity])
            #expect(exported.status == 64, "\(exported.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: identity)) == keyBefore)
        // The files behind --identity-fd and --passphrase-fd, and a vault not made yet.
        let passphrase = path("passphrase.txt")
        try CLIBackend.passphrase.write(toFile: passphrase, atomically: true, encoding: .utf8)
        let fresh = path("fresh.age")
        let result = try shell(
            """
            export KEYCHAIN_BACKEND=vault KEYCHAIN_VAULT='\(team)' KEYCHAIN_PASSPHRASE=
            "$K" --identity-fd 5 inject -o '\(identity)' <<< x 5< '\(identity)'; echo "identity-fd $?"
            export KEYCHAIN_VAULT='\(fresh)'
            "$K" --passphrase-fd 5 inject -o '\(passphrase)' <<< x 5< '\(passphrase)'; echo "passphrase-fd $?"
            "$K" inject -o '\(fresh)' <<< x; echo "fresh $?"; [ -e '\(fresh)' ] || echo "no fresh vault"
            """, in: scratch)
        #expect(result.stdoutText == "identity-fd 64\npassphrase-fd 64\nfresh 64\nno fresh vault\n", "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: identity)) == keyBefore)
        #expect(try String(contentsOfFile: passphrase, encoding: .utf8) == CLIBackend.passphrase)
    }

    /// `.NAME.backup` is the user's (a `cp -p` of the vault, or of a rendered config): a write of
    /// NAME keeps it however old it is. Only this program's own leftovers are removed.
    @Test func theUsersDotBackupFilesAreKept() throws {
        try CLIBackend.withVault { vault in
            let s = uniqueService()
            _ = try cli(["-s", s, "set", "db"], input: "hunter2")
            let directory = (vault as NSString).deletingLastPathComponent
            let old = Date(timeIntervalSinceNow: -3600)
            let kept = ["\(directory)/.vault.age.backup", path(".config.yaml.backup")]
            for target in kept {
                try "mine".write(toFile: target, atomically: false, encoding: .utf8)
                chmod(target, 0o600)
                try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: target)
            }
            _ = try cli(["-s", s, "set", "other"], input: "x")
            #expect(try cli(["inject", "-o", path("config.yaml")], input: "{{ keychain://\(s)/db }}").status == 0)
            #expect(try cli(["inject", "-o", path("config.yaml")], input: "{{ keychain://\(s)/db }}").status == 0)
            for target in kept {
                #expect(try String(contentsOfFile: target, encoding: .utf8) == "mine", "\(target)")
            }
        }
    }

    /// A large secret referenced many times: the result is written as it is made, so memory stays
    /// that of one block and one secret (before: the whole result in memory, 600 MiB here, and a
    /// SIGABRT under a memory limit).
    @Test func injectStreamsAResultFarLargerThanMemoryNeeds() throws {
        try CLIBackend.withVault { _ in
            let s = uniqueService()
            let secret = String(repeating: "s", count: 1_000_000)
            #expect(try cli(["-s", s, "set", "big", "--from-file", "/dev/stdin"], input: secret).status == 0)
            let template = String(repeating: "{{ keychain://\(s)/big }}\n", count: 600)
            try template.write(toFile: path("big.tmpl"), atomically: true, encoding: .utf8)
            let result = try shell(
                #"/usr/bin/time -f %M "$K" inject -i big.tmpl -o /dev/stdout 2>rss.txt | wc -c; tail -1 rss.txt"#,
                in: scratch)
            let lines = result.stdoutText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.first == "\(600 * 1_000_001)", "\(result.stdoutText) \(result.stderr)")
            let kilobytes = Int(lines.last ?? "") ?? .max
            #expect(kilobytes < 150_000, "peak memory \(kilobytes) KB for a 600 MB result")
        }
    }
}
