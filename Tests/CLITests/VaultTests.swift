import Foundation
import TestSupport
import Testing

/// `age --decrypt` of the file at `path`, typing `passphrase` at its prompt (age reads it only
/// from a terminal, which expect gives it).
private func ageDecrypt(_ path: String, passphrase: String = CLIBackend.passphrase) throws -> ProcessResult {
    let output = path + ".plain"
    defer { try? FileManager.default.removeItem(atPath: output) }
    var result = try expect(
        """
        spawn age --decrypt -o \(output) \(path)
        expect "Enter passphrase"
        send "\(passphrase)\\r"
        expect eof
        catch wait status
        exit [lindex $status 3]
        """)
    result.stdout = (try? Data(contentsOf: URL(fileURLWithPath: output))) ?? Data()
    return result
}

/// `age --encrypt --passphrase` of the file at `input` into `output`, typing `passphrase` twice.
private func ageEncrypt(_ input: String, to output: String, passphrase: String = CLIBackend.passphrase) throws
    -> ProcessResult
{
    try expect(
        """
        spawn age --encrypt --passphrase -o \(output) \(input)
        expect "Enter passphrase"
        send "\(passphrase)\\r"
        expect "Confirm passphrase"
        send "\(passphrase)\\r"
        expect eof
        catch wait status
        exit [lindex $status 3]
        """)
}

private func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

private func mode(_ path: String) throws -> Int {
    try (FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
}

/// Replaces the first `old` in `data` with `new`.
private func replace(_ data: inout Data, _ old: String, with new: String) {
    data.replaceSubrange(data.range(of: Data(old.utf8))!, with: Data(new.utf8))
}

/// Changes the base64 character at `offset` into another one.
private func flipBase64(_ data: inout Data, at offset: Int) {
    data[offset] = data[offset] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
}

/// Changes a base64 character near the start of the header's line `line` (0 is the version line).
private func flipBase64(_ data: inout Data, line: Int) {
    var start = 0
    for _ in 0..<line { start = data[start...].firstIndex(of: UInt8(ascii: "\n"))! + 1 }
    flipBase64(&data, at: start + 5)
}

/// A secret larger than age's 64 KiB chunks, and not text.
private let largeBinary = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

@Suite("The vault: an age file, on machines without a Secret Service")
struct VaultTests {
    @Test func ageDecryptsTheVaultToTheDocumentedJSON() throws {
        try CLIBackend.withVault { vault in
            #expect(try cli(["-s", "ci", "set", "token"], input: "t0ken").status == 0)
            #expect(try cli(["-s", "ci", "set", "blob", "--raw"], stdin: largeBinary).status == 0)
            let header = String(decoding: try bytes(vault).prefix(40), as: UTF8.self)
            #expect(header.hasPrefix("age-encryption.org/v1\n-> scrypt "))
            #expect(try mode(vault) == 0o600)
            #expect(try mode((vault as NSString).deletingLastPathComponent) == 0o700)

            let decrypted = try ageDecrypt(vault)
            #expect(decrypted.status == 0, "\(decrypted.stdoutText)")
            let document = try #require(try JSONSerialization.jsonObject(with: decrypted.stdout) as? [String: Any])
            #expect(document["format"] as? String == "keychain-cli-vault")
            #expect(document["version"] as? Int == 1)
            let items = try #require(document["items"] as? [[String: Any]])
            #expect(items.map { $0["key"] as? String } == ["blob", "token"])
            #expect(items[1]["secret"] as? String == "t0ken")
            #expect(items[1]["encoding"] as? String == "utf8")
            #expect(items[0]["encoding"] as? String == "base64")
            #expect(Data(base64Encoded: items[0]["secret"] as? String ?? "") == largeBinary)
            #expect(items[1]["created"] is String && items[1]["modified"] is String)
            // The plaintext imports as it is, here into a second vault.
            let copy = vault + ".copy.age"
            let imported = try cli(["--vault", copy, "import"], stdin: decrypted.stdout)
            #expect(imported.stdoutText == "added 2, replaced 0, skipped 0\n", "\(imported.stderr)")
            #expect(try cli(["--vault", copy, "-s", "ci", "get", "blob"]).stdout == largeBinary)
        }
    }

    @Test func aFileAgeEncryptedOpensAsAVaultAndStaysReadableByAge() throws {
        try CLIBackend.withVault { vault in
            let plain = vault + ".json"
            try FileManager.default.createDirectory(
                atPath: (vault as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            let document: [String: Any] = [
                "format": "keychain-cli-vault", "version": 1,
                "items": [
                    ["service": "ci", "key": "token", "encoding": "utf8", "secret": "from-age"],
                    [
                        "service": "ci", "key": "blob", "encoding": "base64",
                        "secret": largeBinary.base64EncodedString(),
                    ],
                ],
            ]
            try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: plain))
            let encrypted = try ageEncrypt(plain, to: vault)
            #expect(encrypted.status == 0, "\(encrypted.stdoutText)")

            #expect(try cli(["-s", "ci", "get", "token"]).stdoutText == "from-age")
            #expect(try cli(["-s", "ci", "get", "blob"]).stdout == largeBinary)
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "blob\ntoken\n")
            // Our write keeps age's header (scrypt 2^18) and is still an age file.
            #expect(try cli(["-s", "ci", "set", "added"], input: "by-us").status == 0)
            let decrypted = try ageDecrypt(vault)
            #expect(decrypted.status == 0)
            #expect(decrypted.stdoutText.contains("\"secret\" : \"by-us\""))
            #expect(decrypted.stdoutText.contains("\"secret\" : \"from-age\""))
        }
    }

    @Test func aWrongPassphraseExits77AndChangesNothing() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "k"], input: "v")
            let before = try bytes(vault)
            let wrong = ["KEYCHAIN_PASSPHRASE": "not the passphrase"]
            let get = try cli(["get", "k"], extra: wrong)
            #expect(get.status == 77)
            #expect(get.stderr.hasPrefix("keychain-cli: wrong passphrase for the vault '\(vault)'"))
            #expect(try cli(["set", "k2"], stdin: Data("x".utf8), extra: wrong).status == 77)
            #expect(try cli(["delete", "k"], extra: wrong).status == 77)
            #expect(try bytes(vault) == before)
        }
    }

    /// Each region of the file, altered or cut: (what, how, expected exit code). The passphrase
    /// wraps the key with the salt and work factor, so altering those reads as a wrong passphrase.
    static let damages: [(String, @Sendable (inout Data, _ headerEnd: Int) -> Void, Int32)] = [
        ("empty file", { data, _ in data = Data() }, 65),
        ("not age at all", { data, _ in data = Data("{\"format\": \"keychain-cli-vault\"}".utf8) }, 65),
        ("version line", { data, _ in data[12] ^= 0x01 }, 65),
        ("recipient type", { data, _ in data[25] = UInt8(ascii: "x") }, 65),
        ("salt", { data, _ in data[35] = data[35] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A") }, 77),
        ("work factor", { data, _ in replace(&data, " 10\n", with: " 11\n") }, 77),
        ("wrapped key", { data, _ in flipBase64(&data, line: 2) }, 77),
        ("MAC", { data, headerEnd in flipBase64(&data, at: headerEnd - 10) }, 65),
        ("payload nonce", { data, headerEnd in data[headerEnd + 3] ^= 0x80 }, 65),
        ("first chunk", { data, headerEnd in data[headerEnd + 16 + 100] ^= 0x01 }, 65),
        ("last chunk's tag", { data, _ in data[data.count - 1] ^= 0x01 }, 65),
        ("cut inside the header", { data, headerEnd in data = data.prefix(headerEnd / 2) }, 65),
        ("cut after the header", { data, headerEnd in data = data.prefix(headerEnd) }, 65),
        ("cut after a full chunk", { data, headerEnd in data = data.prefix(headerEnd + 16 + 65_536 + 16) }, 65),
        ("cut by one byte", { data, _ in data = data.dropLast() }, 65),
        ("a byte appended", { data, _ in data.append(0) }, 65),
    ]

    @Test(arguments: damages.indices)
    func damageAnywhereIsAClearErrorAndTheFileIsLeftAsItWas(damage index: Int) throws {
        let (what, damage, code) = Self.damages[index]
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "big", "--raw"], stdin: largeBinary)  // two chunks and a bit
            var data = try bytes(vault)
            let headerEnd = try #require(data.range(of: Data("\n--- ".utf8))).upperBound + 43 + 1
            damage(&data, headerEnd)
            try data.write(to: URL(fileURLWithPath: vault))
            for arguments in [["get", "big"], ["set", "other"], ["list"], ["reset", "--yes"]] {
                let result = try cli(arguments, stdin: Data("x".utf8))
                #expect(result.status == code, "\(what): \(arguments): \(result.stderr)")
                let expected = code == 77 ? "wrong passphrase for the vault" : "cannot open the vault '\(vault)': "
                #expect(result.stderr.hasPrefix("keychain-cli: " + expected), "\(what): \(result.stderr)")
                #expect(result.stdout.isEmpty)
            }
            #expect(try bytes(vault) == data, "\(what): the damaged vault was changed")
        }
    }

    @Test func concurrentWritersLoseNoUpdate() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "first"], input: "v")
            // Twelve processes at once, each setting its own key.
            let writers = try (1...12).map { try launchCLI(["set", "key-\($0)"]) }
            for (i, (_, input)) in writers.enumerated() {
                try input.write(contentsOf: Data("value-\(i + 1)".utf8))
                try input.close()
            }
            for (process, _) in writers {
                #expect(process.wait(timeout: 60) && process.ending == "exited with status 0")
            }
            let keys = try cli(["list"]).stdoutText.split(separator: "\n").map(String.init)
            #expect(Set(keys) == Set(["first"] + (1...12).map { "key-\($0)" }))
            for i in [1, 7, 12] {
                #expect(try cli(["get", "key-\(i)"]).stdoutText == "value-\(i)")
            }
        }
    }

    @Test func aWriterKilledMidWriteLeavesAVaultThatOpens() throws {
        try CLIBackend.withVault { vault in
            // Large enough that writing and fsyncing it takes a while.
            for i in 0..<6 {
                _ = try cli(["set", "bulk-\(i)", "--raw"], stdin: Data(repeating: UInt8(i), count: 1 << 20))
            }
            let directory = (vault as NSString).deletingLastPathComponent
            var killedMidWrite = 0
            for attempt in 0..<5 {
                let (process, input) = try launchCLI(["set", "new-\(attempt)"])
                try input.write(contentsOf: Data("value".utf8))
                try input.close()
                // Kill it the moment it holds the new vault open: an unnamed file (O_TMPFILE) in
                // the vault's directory, which /proc shows as "DIRECTORY/#INODE (deleted)".
                let descriptors = "/proc/\(process.pid)/fd"
                while process.isRunning {
                    let open = (try? FileManager.default.contentsOfDirectory(atPath: descriptors)) ?? []
                    let writing = open.contains { fd in
                        let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(descriptors)/\(fd)")
                        return target?.hasPrefix(directory + "/#") == true
                    }
                    if writing {
                        if process.signal(SIGKILL) { killedMidWrite += 1 }
                        break
                    }
                }
                process.wait(timeout: 60)
                #expect(try cli(["get", "bulk-5"]).stdout == Data(repeating: 5, count: 1 << 20))
                let list = try cli(["list"])
                #expect(list.status == 0, "\(list.stderr)")
            }
            #expect(killedMidWrite > 0, "no writer was caught mid-write")
            // A killed writer leaves nothing behind: its unnamed file vanishes with it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["vault.age"])
            #expect(try cli(["set", "after"], input: "v").status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["vault.age"])
        }
    }

    @Test func aWriterThatHoldsTheLockMakesOthersTimeOutWith75() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "k"], input: "v")
            let fd = open((vault as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
            defer { close(fd) }
            #expect(flock(fd, LOCK_EX) == 0)
            let blocked = try cli(["--timeout", "0.3", "set", "k"], stdin: Data("w".utf8))
            #expect(blocked.status == 75)
            #expect(blocked.stderr.contains("kept the vault '\(vault)' locked for 0.3 s"))
            // Readers need no lock.
            #expect(try cli(["get", "k"]).stdoutText == "v")
        }
    }

    @Test func theVaultThatCannotBeReadOrWrittenExits74() throws {
        let scratch = try ScratchDirectory("vault-io")
        defer { scratch.remove() }
        let notAFile = scratch.path("a-directory")
        try FileManager.default.createDirectory(atPath: notAFile, withIntermediateDirectories: true)
        try CLIBackend.withVault { _ in
            // A directory that is not a tree vault is named as one, with the command that makes one.
            let read = try cli(["--vault", notAFile, "--backend", "vault", "get", "k"])
            #expect(read.status == 64)
            #expect(read.stderr.contains("'\(notAFile)' names a directory that is not a tree vault"))
            #expect(read.stderr.contains("keychain-cli vault init"))
            let underAFile = scratch.path("plain-file")
            _ = FileManager.default.createFile(atPath: underAFile, contents: Data())
            let write = try cli(["--vault", underAFile + "/vault.age", "set", "k"], stdin: Data("v".utf8))
            #expect(write.status == 74)
            #expect(write.stderr.contains("'\(underAFile)"))
        }
    }
}

@Suite("The vault's passphrase and backend choice")
struct VaultSettingsTests {
    @Test func passphraseFromAFileOrADescriptorIgnoresOneTrailingNewline() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "k"], input: "v")
            let file = vault + ".pw"
            try Data((CLIBackend.passphrase + "\n").utf8).write(to: URL(fileURLWithPath: file))
            try CLIBackend.$overrides.withValue(CLIBackend.overrides.merging(["KEYCHAIN_PASSPHRASE": nil]) { $1 }) {
                #expect(try cli(["get", "k", "--passphrase-file", file]).stdoutText == "v")
                var environment = cliEnvironment()
                environment["KC"] = keychainCLIPath
                let fd = try runProcess(
                    "/bin/sh", ["-c", #""$KC" --passphrase-fd 3 get k 3<"$0""#, file], environment: environment)
                #expect(fd.stdoutText == "v", "\(fd.stderr)")
                let none = try cli(["get", "k"])
                #expect(none.status == 77)
                #expect(none.stderr.contains("no terminal to ask at"))
                #expect(none.stderr.contains("KEYCHAIN_PASSPHRASE"))
                let missing = try cli(["get", "k", "--passphrase-file", file + ".missing"])
                #expect(missing.status == 77)
                #expect(missing.stderr.contains("cannot open '\(file).missing'"))
            }
        }
    }

    @Test func atATerminalANewVaultAsksTwiceAndAnOpenOneOnce() throws {
        try CLIBackend.withVault { vault in
            try CLIBackend.$overrides.withValue(CLIBackend.overrides.merging(["KEYCHAIN_PASSPHRASE": nil]) { $1 }) {
                let mismatch = try expect(
                    """
                    spawn sh -c "printf v | $env(KEYCHAIN_CLI) set k"
                    expect "New vault \(vault). Passphrase: "
                    send "one\\r"
                    expect "Repeat the passphrase: "
                    send "two\\r"
                    expect eof
                    catch wait status
                    exit [lindex $status 3]
                    """)
                #expect(mismatch.status == 77, "\(mismatch.stdoutText)")
                #expect(mismatch.stdoutText.contains("the two passphrases typed differ"))
                #expect(!FileManager.default.fileExists(atPath: vault))
                let created = try expect(
                    """
                    spawn sh -c "printf typed-value | $env(KEYCHAIN_CLI) set k"
                    expect "Passphrase: "
                    send "typed pass\\r"
                    expect "Repeat the passphrase: "
                    send "typed pass\\r"
                    expect eof
                    catch wait status
                    exit [lindex $status 3]
                    """)
                #expect(created.status == 0, "\(created.stdoutText)")
                #expect(!created.stdoutText.contains("typed pass"), "the passphrase was echoed")
                let read = try expect(
                    """
                    spawn $env(KEYCHAIN_CLI) get k
                    expect "Passphrase for the vault \(vault): "
                    send "typed pass\\r"
                    expect "typed-value"
                    expect eof
                    catch wait status
                    exit [lindex $status 3]
                    """)
                #expect(read.status == 0, "\(read.stdoutText)")
            }
        }
    }

    @Test func badBackendSettingsAreUsageErrors() throws {
        try CLIBackend.withVault { vault in
            let cases: [([String], [String: String], String)] = [
                (["--passphrase-file", "a", "--passphrase-fd", "3", "list"], [:], "not both"),
                (["--backend", "secret-service", "--vault", vault, "list"], [:], "need the vault backend"),
                (
                    ["doctor", "--passphrase-file", "pw"], ["KEYCHAIN_BACKEND": "secret-service"],
                    "need the vault backend"
                ),
                (["list"], ["KEYCHAIN_BACKEND": "keyring"], "KEYCHAIN_BACKEND is 'keyring'"),
                (["list"], ["KEYCHAIN_VAULT_WORK_FACTOR": "99"], "from 1 to 20"),
                (["--backend", "file", "list"], [:], "backend"),
                (["--vault", "", "list"], [:], "need a path"),
            ]
            for (arguments, extra, message) in cases {
                let result = try cli(arguments, extra: extra)
                #expect(result.status == 64, "\(arguments) \(extra): \(result.stderr)")
                #expect(result.stderr.contains(message), "\(arguments) \(extra): \(result.stderr)")
            }
        }
    }

    @Test func execPassesNeitherThePassphraseNorItsDescriptorOn() throws {
        try CLIBackend.withVault { vault in
            _ = try cli(["set", "k"], input: "v")
            let script =
                #"printf '%s|%s|' "$K" "${KEYCHAIN_PASSPHRASE-unset}"; [ -e /dev/fd/3 ] && echo open || echo closed"#
            let viaEnvironment = try cli(["exec", "--env", "K=k", "--", "sh", "-c", script])
            #expect(viaEnvironment.stdoutText == "v|unset|closed\n", "\(viaEnvironment.stderr)")
            let file = vault + ".pw"
            try Data(CLIBackend.passphrase.utf8).write(to: URL(fileURLWithPath: file))
            var environment = cliEnvironment()
            environment["KEYCHAIN_PASSPHRASE"] = nil
            environment["KC"] = keychainCLIPath
            environment["SCRIPT"] = script
            let viaDescriptor = try runProcess(
                "/bin/sh", ["-c", #""$KC" --passphrase-fd 3 exec --env K=k -- sh -c "$SCRIPT" 3<"$0""#, file],
                environment: environment)
            #expect(viaDescriptor.stdoutText == "v|unset|closed\n", "\(viaDescriptor.stderr)")
        }
    }

    @Test func doctorChecksTheVaultAndExitsWithTheFirstFailure() throws {
        try CLIBackend.withVault { vault in
            let fresh = try cli(["doctor"])
            #expect(fresh.status == 0, "\(fresh.stdoutText)")
            #expect(fresh.stdoutText.contains("✓ vault file: \(vault) does not exist yet"))
            _ = try cli(["-s", "a", "set", "k"], input: "v")
            _ = try cli(["-s", "b", "set", "k"], input: "v")
            let healthy = try cli(["doctor"])
            #expect(healthy.status == 0)
            #expect(
                healthy.stdoutText.split(separator: "\n").map { String($0.prefix(1)) } == ["✓", "✓", "✓", "✓", "✓"])
            #expect(healthy.stdoutText.contains("✓ vault lock: a passphrase (scrypt)"))
            #expect(healthy.stdoutText.contains("✓ passphrase: from $KEYCHAIN_PASSPHRASE"))
            #expect(healthy.stdoutText.contains("✓ vault opens: decrypted: 2 items in 2 services"))

            let wrong = try cli(["doctor", "--json"], extra: ["KEYCHAIN_PASSPHRASE": "wrong"])
            #expect(wrong.status == 77)
            let checks = try #require(try JSONSerialization.jsonObject(with: wrong.stdout) as? [[String: String]])
            #expect(checks.map { $0["status"] } == ["ok", "ok", "ok", "ok", "failed"])

            chmod(vault, 0o644)
            let exposed = try cli(["doctor"])
            #expect(exposed.status == 74)
            #expect(
                exposed.stdoutText.contains("✗ vault file: other users can open the vault file '\(vault)' (mode 0644)"))
            #expect(exposed.stdoutText.contains("chmod 600"))
        }
    }
}
