import Foundation
import TestSupport
import Testing

/// `unlock` of a passphrase tree vault: the holder keeps its identity, as it keeps a vault
/// file's key, for the test's user and for a plain user.
@Suite("Tree vaults through unlock's holder")
struct TreeVaultUnlockTests {
    @Test(arguments: HolderUser.available)
    func unlockHoldsATreeVaultsIdentityUntilLock(as user: HolderUser) throws {
        let place = try UnlockPlace(as: user, tree: true)
        defer { place.finish() }
        #expect(try place.run(["get", "token"]).status == 77, "no passphrase and no holder yet")
        let unlocked = try place.run(["unlock"], passphrase: true)
        #expect(unlocked.status == 0, "\(unlocked.stderr)")
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        // Writes through the holder land in the tree, one file each, and read back directly.
        #expect(try place.run(["set", "held"], stdin: Data("through".utf8)).status == 0)
        #expect(try place.run(["get", "held"], passphrase: true).stdoutText == "through")
        #expect(FileManager.default.fileExists(atPath: place.vault + "/keychain-cli/held.age"))
        #expect(try place.run(["list"]).stdoutText == "held\ntoken\n")
        let locked = try place.run(["lock"])
        #expect(locked.status == 0, "\(locked.stderr)")
        #expect(try place.run(["get", "token"]).status == 77)
        #expect(try place.run(["get", "token"], passphrase: true).stdoutText == place.secret)
    }
}
