import Crypto
import Foundation
import Testing

@testable import KeychainAge
@testable import KeychainCore

/// What `unlock`'s holder keeps of an ssh-ed25519 identity (its X25519 key and Ed25519 public key,
/// never the seed), and the deferred identity of a passphrase-protected key.
@Suite("age ssh-ed25519 identities: held and deferred forms")
struct AgeHeldSSHIdentityTests {
    static func identity() throws -> (AgeSSHEd25519.Identity, seed: [UInt8], publicKey: [UInt8]) {
        let signing = Curve25519.Signing.PrivateKey()
        let seed = Array(signing.rawRepresentation)
        let publicKey = Array(signing.publicKey.rawRepresentation)
        return (try AgeSSHEd25519.Identity(seed: seed, publicKey: publicKey), seed, publicKey)
    }

    @Test func theHeldFormOpensWhatTheKeyOpensAndHoldsNoSeed() throws {
        let (identity, seed, publicKey) = try Self.identity()
        let recipient = try VaultRecipient(identity.recipientText)
        let fileKey = [UInt8](repeating: 9, count: 16)
        let stanza = try recipient.recipient.wrap(fileKey)
        let raw = identity.withRawKey { Array($0) }
        #expect(raw.count == 64 && Array(raw[32...]) == publicKey)
        #expect(raw.firstRange(of: seed) == nil, "the seed is not part of it")
        let held = try #require(raw.withUnsafeBytes { AgeSSHEd25519.Identity(rawKey: $0) })
        #expect(held.recipientText == identity.recipientText)
        #expect(try held.unwrap(stanza) == fileKey)
        // Another key's public half, a short buffer: not an identity.
        let (_, _, otherPublic) = try Self.identity()
        let mismatched = Array(raw[..<32]) + otherPublic
        #expect(mismatched.withUnsafeBytes { AgeSSHEd25519.Identity(rawKey: $0) } == nil)
        #expect(raw.prefix(32).withUnsafeBytes { AgeSSHEd25519.Identity(rawKey: $0) } == nil)
    }

    @Test func aDeferredIdentityOpensOnceAndOnlyForItsOwnStanzas() throws {
        let (identity, seed, publicKey) = try Self.identity()
        let (other, _, _) = try Self.identity()
        let opened = Locked(0)
        let deferred = try #require(
            AgeSSHEd25519.deferredIdentity(publicKey: publicKey) {
                opened.withLock { $0 += 1 }
                return seed
            })
        #expect(deferred.recipientText == identity.recipientText && deferred.stanzaType == "ssh-ed25519")
        let fileKey = [UInt8](repeating: 3, count: 16)
        let foreign = try VaultRecipient(other.recipientText).recipient.wrap(fileKey)
        #expect(try deferred.unwrap(foreign) == nil)
        #expect(opened.withLock { $0 } == 0, "a stanza for another key opens nothing")
        let own = try VaultRecipient(identity.recipientText).recipient.wrap(fileKey)
        #expect(try deferred.unwrap(own) == fileKey)
        #expect(try deferred.unwrap(own) == fileKey)
        #expect(opened.withLock { $0 } == 1)
        // A failure is kept: not asked again.
        let failing = try #require(
            AgeSSHEd25519.deferredIdentity(publicKey: publicKey) {
                opened.withLock { $0 += 1 }
                throw AgeFile.Failure.wrongPassphrase
            })
        #expect(throws: AgeFile.Failure.wrongPassphrase) { try failing.unwrap(own) }
        #expect(throws: AgeFile.Failure.wrongPassphrase) { try failing.unwrap(own) }
        #expect(opened.withLock { $0 } == 2)
    }
}
