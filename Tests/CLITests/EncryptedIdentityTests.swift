import Foundation
import TestSupport
import Testing

private func run(_ executable: String, _ arguments: [String], stdin: Data? = nil) throws -> ProcessResult {
    try runProcess(executable, arguments, stdin: stdin, environment: ["PATH": "/usr/bin:/bin"])
}

/// A passphrase-protected ed25519 key from ssh-keygen (`key`, passphrase ``passphrase``), its
/// seed (read from an unencrypted copy, removed at once), and a team vault file `age -R key.pub`
/// wrote, holding ci/k = ``secret``. Its HOME and TMPDIR are in the scratch directory.
struct LockedKey {
    let scratch: ScratchDirectory
    let key: String
    let seed: [UInt8]
    let vault: String
    let passphrase = "key pass phrase"
    let secret = "from-age-\(UUID().uuidString)"
    var home: String { scratch.path("home") }

    init(type: String = "ed25519") throws {
        scratch = try ScratchDirectory("locked-key")
        try FileManager.default.createDirectory(atPath: scratch.path("home"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch.path("tmp"), withIntermediateDirectories: true)
        key = scratch.path("id_\(type)")
        let made = try run("/usr/bin/ssh-keygen", ["-q", "-t", type, "-N", "", "-C", "member@ci", "-f", key])
        #expect(made.status == 0, "\(made.stderr)")
        seed = type == "ed25519" ? try Self.seed(ofUnencrypted: key) : []
        let locked = try run("/usr/bin/ssh-keygen", ["-q", "-p", "-P", "", "-N", passphrase, "-f", key])
        #expect(locked.status == 0, "\(locked.stderr)")
        vault = scratch.path("team.age")
        guard type == "ed25519" else { return }
        let document = scratch.path("document.json")
        try Data(
            #"{"format":"keychain-cli-vault","version":1,"items":[{"service":"ci","key":"k","encoding":"utf8","secret":"\#(secret)"}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: document))
        let encrypted = try run("/usr/bin/age", ["-R", key + ".pub", "-o", vault, document])
        #expect(encrypted.status == 0, "\(encrypted.stderr)")
        try FileManager.default.removeItem(atPath: document)
    }

    /// The 32-byte seed of an unencrypted OpenSSH ed25519 key file: the private section's
    /// `string(seed || A)`, found by its public key A.
    static func seed(ofUnencrypted path: String) throws -> [UInt8] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        let decoded = [UInt8](Data(base64Encoded: body) ?? Data())
        let publicLine = try String(contentsOfFile: path + ".pub", encoding: .utf8).split(separator: " ")
        let publicKey = [UInt8](Data(base64Encoded: String(publicLine[1])) ?? Data()).suffix(32)
        for start in decoded.indices.dropLast(68)
        where decoded[start..<start + 4] == [0, 0, 0, 64] && decoded[start + 36..<start + 68].elementsEqual(publicKey) {
            return Array(decoded[start + 4..<start + 36])
        }
        throw FixtureFailed(detail: "no ed25519 seed in \(path)")
    }

    /// The environment of a keychain-cli on `vault` (the team vault by default) with `extra`.
    func environment(_ extra: [String: String] = [:], vault: String? = nil) -> [String: String] {
        [
            "KEYCHAIN_BACKEND": "vault", "KEYCHAIN_VAULT": vault ?? self.vault, "HOME": home,
            "TMPDIR": scratch.path("tmp"), "KEYCHAIN_VAULT_WORK_FACTOR": "10",
        ].merging(extra) { $1 }
    }

    func cli(_ arguments: [String], stdin: Data? = nil, _ extra: [String: String] = [:], vault: String? = nil) throws
        -> ProcessResult
    {
        try TestSupport.cli(arguments, stdin: stdin, session: nil, extra: environment(extra, vault: vault))
    }

    /// The files under the scratch directory (HOME and TMPDIR included) that hold the seed.
    func filesHoldingTheSeed() -> [String] {
        let root = scratch.url.path
        let names = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return names.filter { name in
            guard let data = FileManager.default.contents(atPath: "\(root)/\(name)"), data.count >= 32 else {
                return false
            }
            return data.range(of: Data(seed)) != nil
        }
    }
}

@Suite("Team vaults: a passphrase-protected OpenSSH ed25519 key as the identity")
struct EncryptedIdentityTests {
    /// age -R key.pub wrote the vault; the encrypted key opens it with $KEYCHAIN_KEY_PASSPHRASE,
    /// by --identity, $KEYCHAIN_IDENTITY and --identity-fd; a write keeps it open to that key.
    @Test func theKeysPassphraseFromTheEnvironmentOpensAVaultAgeWrote() throws {
        let locked = try LockedKey()
        defer { locked.scratch.remove() }
        #expect(locked.seed.count == 32 && locked.filesHoldingTheSeed().isEmpty)
        let given = ["KEYCHAIN_KEY_PASSPHRASE": locked.passphrase]
        let byOption = try locked.cli(["--identity", locked.key, "-s", "ci", "get", "k"], given)
        #expect(byOption.status == 0 && byOption.stdoutText == locked.secret, "\(byOption.stderr)")
        let byVariable = try locked.cli(
            ["-s", "ci", "get", "k"], given.merging(["KEYCHAIN_IDENTITY": locked.key]) { $1 })
        #expect(byVariable.stdoutText == locked.secret, "\(byVariable.stderr)")
        var environment = cliEnvironment(session: nil).merging(locked.environment(given)) { $1 }
        environment["KC"] = keychainCLIPath
        let fromFD = try runProcess(
            "/bin/sh", ["-c", #""$KC" --identity-fd 3 -s ci get k 3<"$0""#, locked.key], environment: environment)
        #expect(fromFD.status == 0 && fromFD.stdoutText == locked.secret, "\(fromFD.stderr)")
        // A write encrypts to the recipients the vault had (the key's), and reads back.
        let identity = given.merging(["KEYCHAIN_IDENTITY": locked.key]) { $1 }
        let write = try locked.cli(["-s", "ci", "set", "written"], stdin: Data("by-us".utf8), identity)
        #expect(write.status == 0, "\(write.stderr)")
        #expect(try locked.cli(["-s", "ci", "get", "written"], identity).stdoutText == "by-us")
        // exec's command gets the secret, not the key's passphrase.
        let exec = try locked.cli(
            [
                "-s", "ci", "exec", "--no-mask", "--env", "T=written", "--", "sh", "-c",
                #"printf '%s|%s' "$T" "${KEYCHAIN_KEY_PASSPHRASE-unset}""#,
            ], identity)
        #expect(exec.status == 0 && exec.stdoutText == "by-us|unset", "\(exec.stdoutText) \(exec.stderr)")
        #expect(locked.filesHoldingTheSeed().isEmpty, "no file holds the decrypted key")
    }

    /// A wrong passphrase, none and no terminal, a vault not encrypted to the key (nothing is
    /// asked), and an encrypted ECDSA key: each 77 with one line saying what to do, and the
    /// passphrase never in a message.
    @Test func wrongMissingAndUnneededPassphrasesAndAnotherKeyType() throws {
        let locked = try LockedKey()
        defer { locked.scratch.remove() }
        let identity = ["KEYCHAIN_IDENTITY": locked.key]
        let wrong = try locked.cli(
            ["-s", "ci", "get", "k"], identity.merging(["KEYCHAIN_KEY_PASSPHRASE": "not it"]) { $1 })
        #expect(wrong.status == 77 && wrong.stdoutText.isEmpty, "\(wrong.stderr)")
        #expect(
            wrong.stderr.contains("is not opened by the passphrase from $KEYCHAIN_KEY_PASSPHRASE"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("not it") && wrong.stderr.split(separator: "\n").count == 1, "\(wrong.stderr)")
        let missing = try locked.cli(["-s", "ci", "get", "k"], identity)
        #expect(missing.status == 77, "\(missing.stderr)")
        #expect(
            missing.stderr.contains("no terminal") && missing.stderr.contains("$KEYCHAIN_KEY_PASSPHRASE")
                && missing.stderr.contains("keychain-cli unlock"), "\(missing.stderr)")
        // A vault encrypted to someone else: the key is not opened (no passphrase needed to say so).
        let other = locked.scratch.path("other.txt")
        let recipient = try locked.cli(["vault", "keygen", "-o", other]).stdoutText.trimmingCharacters(in: .newlines)
        let elsewhere = locked.scratch.path("elsewhere.age")
        #expect(try locked.cli(["vault", "init", elsewhere, "--recipient", recipient], identity).status == 0)
        #expect(
            try locked.cli(
                ["-s", "ci", "set", "x"], stdin: Data("y".utf8), ["KEYCHAIN_IDENTITY": other], vault: elsewhere
            )
            .status == 0)
        let notOurs = try locked.cli(["-s", "ci", "get", "x"], identity, vault: elsewhere)
        #expect(notOurs.status == 77 && notOurs.stderr.contains("none of the identities"), "\(notOurs.stderr)")
        #expect(!notOurs.stderr.contains("passphrase-protected"), "\(notOurs.stderr)")
        // An encrypted ECDSA key is refused as an unencrypted one is: not an ed25519 key.
        let ecdsa = try LockedKey(type: "ecdsa")
        defer { ecdsa.scratch.remove() }
        let refused = try locked.cli(
            ["-s", "ci", "get", "k"], ["KEYCHAIN_IDENTITY": ecdsa.key, "KEYCHAIN_KEY_PASSPHRASE": ecdsa.passphrase])
        #expect(refused.status == 77 && refused.stderr.contains("ecdsa-sha2-nistp256"), "\(refused.stderr)")
        #expect(locked.filesHoldingTheSeed().isEmpty)
    }

    /// At a terminal the passphrase is asked (a wrong one asked again); stock age opens what we
    /// wrote with the same encrypted key (it asks the passphrase on its terminal too).
    @Test func theTerminalIsAskedAndStockAgeOpensWhatWeWrote() throws {
        let locked = try LockedKey()
        defer { locked.scratch.remove() }
        let identity = ["KEYCHAIN_IDENTITY": locked.key]
        let write = try locked.cli(
            ["-s", "ci", "set", "written"], stdin: Data("typed-secret".utf8),
            identity.merging(["KEYCHAIN_KEY_PASSPHRASE": locked.passphrase]) { $1 })
        #expect(write.status == 0, "\(write.stderr)")
        let variables = locked.environment(identity).map { "set env(\($0.key)) {\($0.value)}" }
            .joined(separator: "\n")
        let script = """
            \(variables)
            set timeout 30
            spawn $env(KEYCHAIN_CLI) -s ci get written
            expect "Passphrase for the key of"
            send "wrong\\r"
            expect "try again"
            expect "Passphrase for the key of"
            send "\(locked.passphrase)\\r"
            expect "typed-secret"
            expect eof
            catch wait result
            puts "EXIT [lindex $result 3]"
            spawn /usr/bin/age -d -i \(locked.key) -o \(locked.scratch.path("tmp/out.json")) \(locked.vault)
            expect -nocase "passphrase"
            send "\(locked.passphrase)\\r"
            expect eof
            catch wait result
            puts "AGE [lindex $result 3]"
            """
        let result = try expect(script, session: nil)
        #expect(result.stdoutText.contains("EXIT 0") && result.stdoutText.contains("AGE 0"), "\(result.stdoutText)")
        let opened = try String(contentsOfFile: locked.scratch.path("tmp/out.json"), encoding: .utf8)
        #expect(opened.contains("typed-secret") && opened.contains(locked.secret))
        try FileManager.default.removeItem(atPath: locked.scratch.path("tmp/out.json"))
        #expect(locked.filesHoldingTheSeed().isEmpty)
    }
}
