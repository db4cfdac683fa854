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

    /// A team tree vault given no identity has nothing to hold: 77, saying what to give.
    @Test func aTeamTreeVaultWithoutAnIdentityHasNothingToUnlock() throws {
        try TreeFixture.run { _ in
            let refused = try cli(["unlock"], session: nil, extra: ["KEYCHAIN_IDENTITY": ""])
            #expect(refused.status == 77 && refused.stderr.contains("team tree vault"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--identity"), "\(refused.stderr)")
        }
    }
}
