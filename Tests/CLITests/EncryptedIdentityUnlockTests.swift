import Foundation
import TestSupport
import Testing

/// `unlock` with a passphrase-protected ssh key as the identity: the passphrase is given once;
/// until `lock`, commands on the vault need neither the identity nor the key's passphrase (a
/// vault file: the holder keeps its file key; a tree vault: the key's X25519 half, never the seed).
@Suite("Team vaults: an encrypted ssh key's vault held by unlock")
struct EncryptedIdentityUnlockTests {
    @Test(arguments: [false, true])
    func unlockAsksTheKeysPassphraseOnceAndLaterCommandsNeedNeither(tree: Bool) throws {
        let locked = try LockedKey()
        defer { locked.scratch.remove() }
        let place = try UnlockPlace()
        defer { place.finish() }
        let identity = ["KEYCHAIN_IDENTITY": locked.key]
        let withPassphrase = identity.merging(["KEYCHAIN_KEY_PASSPHRASE": locked.passphrase]) { $1 }
        var vault = locked.vault
        if tree {
            vault = locked.scratch.path("tree")
            // In git, so that `history` has versions to read while the holder runs.
            try FileManager.default.createDirectory(atPath: vault, withIntermediateDirectories: true)
            #expect(try runProcess("/usr/bin/git", ["init", "-q", vault], environment: [:]).status == 0)
            let made = try place.run(
                ["vault", "init", "--recipient", locked.key + ".pub"], extra: ["KEYCHAIN_VAULT": vault])
            #expect(made.status == 0, "\(made.stderr)")
            let stored = try place.run(
                ["-s", "ci", "set", "k"], stdin: Data(locked.secret.utf8),
                extra: withPassphrase.merging(["KEYCHAIN_VAULT": vault]) { $1 })
            #expect(stored.status == 0, "\(stored.stderr)")
        }
        func run(_ arguments: [String], _ extra: [String: String] = [:], stdin: Data? = nil) throws -> ProcessResult {
            try place.run(arguments, stdin: stdin, extra: extra.merging(["KEYCHAIN_VAULT": vault]) { $1 })
        }
        #expect(try run(["-s", "ci", "get", "k"], identity).status == 77, "no passphrase, and nothing held yet")
        let unlocked = try run(["unlock"], withPassphrase)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        let bare = try run(["-s", "ci", "get", "k"])
        #expect(bare.status == 0 && bare.stdoutText == locked.secret, "\(bare.stderr)")
        // The identity still given (in the profile, say): its key is not opened, nothing is asked.
        let keyGiven = try run(["-s", "ci", "get", "k"], identity)
        #expect(keyGiven.status == 0 && keyGiven.stdoutText == locked.secret, "\(keyGiven.stderr)")
        if tree {
            // history reads git in the vault itself, not through the holder (which keeps none).
            let git = ["-C", vault, "-c", "user.name=t", "-c", "user.email=t@example.com"]
            _ = try runProcess("/usr/bin/git", git + ["add", "-A"], environment: [:])
            #expect(try runProcess("/usr/bin/git", git + ["commit", "-qm", "one"], environment: [:]).status == 0)
            let history = try run(["-s", "ci", "history", "k"], withPassphrase)
            #expect(history.status == 0 && history.stdoutText.contains("created"), "\(history.stderr)")
        }
        let write = try run(["-s", "ci", "set", "held"], stdin: Data("through".utf8))
        #expect(write.status == 0, "\(write.stderr)")
        #expect(try run(["-s", "ci", "get", "held"], withPassphrase).stdoutText == "through")
        #expect(try run(["lock"]).status == 0)
        let afterLock = try run(["-s", "ci", "get", "held"], identity)
        #expect(afterLock.status == 77 && afterLock.stderr.contains("passphrase-protected"), "\(afterLock.stderr)")
        #expect(locked.filesHoldingTheSeed().isEmpty)
        let names = FileManager.default.enumerator(atPath: place.scratch.url.path)?.compactMap { $0 as? String } ?? []
        #expect(
            !names.contains {
                FileManager.default.contents(atPath: place.scratch.path($0))?.range(of: Data(locked.seed)) != nil
            })
    }

    /// Counts, in the readable memory of process argv[1], the 32 bytes of hex argv[2] (an
    /// ed25519 seed) and the first half of their SHA-512 (the X25519 key age derives from it).
    static let search = """
        import hashlib, sys
        seed = bytes.fromhex(sys.argv[2])
        needles = [seed, hashlib.sha512(seed).digest()[:32]]
        found = [0, 0]
        with open("/proc/%s/maps" % sys.argv[1]) as maps, open("/proc/%s/mem" % sys.argv[1], "rb") as mem:
            for line in maps:
                fields = line.split()
                if "r" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                    continue
                start, end = (int(x, 16) for x in fields[0].split("-"))
                try:
                    mem.seek(start); data = mem.read(end - start)
                except OSError:
                    continue
                for index, needle in enumerate(needles): found[index] += data.count(needle)
        print(found[0], found[1])
        """

    /// The holder of a team tree vault unlocked with an encrypted ed25519 key keeps the key's
    /// X25519 half (found, so the search can find a key) and never its seed, which signs.
    @Test(.enabled(if: geteuid() == 0, "reading another process's memory needs root"))
    func theHolderKeepsTheX25519HalfAndNeverTheSeed() throws {
        let locked = try LockedKey()
        defer { locked.scratch.remove() }
        let place = try UnlockPlace()
        defer { place.finish() }
        let tree = ["KEYCHAIN_VAULT": locked.scratch.path("tree"), "KEYCHAIN_IDENTITY": locked.key]
        #expect(try place.run(["vault", "init", "--recipient", locked.key + ".pub"], extra: tree).status == 0)
        let given = tree.merging(["KEYCHAIN_KEY_PASSPHRASE": locked.passphrase]) { $1 }
        #expect(try place.run(["set", "k"], stdin: Data("v".utf8), extra: given).status == 0)
        let unlocked = try place.run(["unlock"], extra: given)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(try place.run(["get", "k"], extra: ["KEYCHAIN_VAULT": tree["KEYCHAIN_VAULT"]!]).stdoutText == "v")
        let pid = try #require(place.holders().first)
        let hex = locked.seed.map { String(format: "%02x", $0) }.joined()
        let result = try runProcess(
            "/usr/bin/python3", ["-c", Self.search, "\(pid)", hex], environment: ["PATH": "/usr/bin:/bin"])
        let counts = result.stdoutText.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        #expect(counts.count == 2 && counts[0] == 0 && counts[1] > 0, "\(result.stdoutText) \(result.stderr)")
    }

    /// A team tree vault given no identity has nothing to hold: 77, saying what to give.
    @Test func aTeamTreeVaultWithoutAnIdentityHasNothingToUnlock() throws {
        try TreeFixture.run { _ in
            let refused = try cli(["unlock"], session: nil, extra: ["KEYCHAIN_IDENTITY": ""])
            #expect(refused.status == 77 && refused.stderr.contains("team tree vault"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--identity"), "\(refused.stderr)")
        }
    }
}
