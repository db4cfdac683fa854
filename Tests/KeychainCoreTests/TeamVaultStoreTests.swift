import Foundation
import Testing

@testable import KeychainCore

/// The library's team vault API: VaultStore with identities, changeRecipients, changePassphrase.
@Suite("VaultStore: team vaults in one process")
struct TeamVaultStoreTests {
    /// A store's passphrase source when none is given.
    private let noPassphrase: VaultStore.PassphraseSource = { _ throws(KeychainError) in
        throw KeychainError.noPassphrase(detail: "none in this test")
    }

    private func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-team-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A team vault removed under a store that opened it is not written again with its old file
    /// key and no recipient list: a write that finds no vault creates a passphrase vault, and
    /// without a passphrase fails (77) as the first write of a new one does.
    @Test func aTeamVaultRemovedIsNotRecreatedWithItsOldHeader() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/team.age"
        let alice = VaultIdentity()
        let store = VaultStore(path: path, workFactor: 10, identities: [alice], passphrase: noPassphrase)
        try store.changeRecipients { _ in [try! VaultRecipient(alice.recipient)] }
        let (service, key) = (try ServiceName("ci"), try KeychainKey("k"))
        try store.setSecret(Data("v1".utf8), service: service, key: key)
        try FileManager.default.removeItem(atPath: path)
        #expect(throws: KeychainError.noPassphrase(detail: "none in this test")) {
            try store.setSecret(Data("v2".utf8), service: service, key: key)
        }
        #expect(try store.lock() == .noVault)
    }

    @Test func recipientsChangeWithANewFileKeyAndWritesKeepThem() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/team.age"
        let (alice, bob) = (VaultIdentity(), VaultIdentity())
        let asAlice = VaultStore(path: path, identities: [alice], passphrase: noPassphrase)
        #expect(try asAlice.lock() == .noVault)
        let (before, after) = try asAlice.changeRecipients { _ in
            [try! VaultRecipient(alice.recipient), try! VaultRecipient(bob.recipient)]
        }
        #expect(before.isEmpty && after.map(\.key) == [alice.recipient, bob.recipient])
        let service = try ServiceName("ci")
        try asAlice.setSecret(Data("v1".utf8), service: service, key: try KeychainKey("k"))
        let asBob = VaultStore(path: path, identities: [bob], passphrase: noPassphrase)
        #expect(try asBob.secret(service: service, key: try KeychainKey("k")) == Data("v1".utf8))
        #expect(try asBob.identitiesThatOpen() == [bob.recipient])
        guard case .recipients(let listed?, let types) = try asBob.lock() else {
            Issue.record("not a team vault")
            return
        }
        #expect(listed.count == 2 && types == ["X25519", "X25519"])

        let header = { String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)).prefix(60), as: UTF8.self) }
        let oldHeader = try header()
        try asAlice.changeRecipients { current in current.filter { $0.key != bob.recipient } }
        #expect(try header() != oldHeader)
        let bobAgain = VaultStore(path: path, identities: [bob], passphrase: noPassphrase)
        #expect(throws: KeychainError.self) { try bobAgain.secret(service: service, key: try KeychainKey("k")) }
        #expect(throws: KeychainError.self) { try asAlice.changeRecipients { _ in [] } }
        #expect(try asAlice.secret(service: service, key: try KeychainKey("k")) == Data("v1".utf8))
    }

    @Test func changePassphraseTurnsATeamVaultIntoAPassphraseVault() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/team.age"
        let identity = VaultIdentity()
        let store = VaultStore(path: path, workFactor: 10, identities: [identity]) { purpose throws(KeychainError) in
            guard purpose == .change else { throw KeychainError.noPassphrase(detail: "only the new one") }
            return Array("new".utf8)
        }
        #expect(try store.changePassphrase() == false)  // no vault yet
        try store.changeRecipients { _ in [try! VaultRecipient(identity.recipient)] }
        try store.setSecret(Data("v".utf8), service: try ServiceName("s"), key: try KeychainKey("k"))
        #expect(try store.changePassphrase())
        let reader = VaultStore(path: path) { _ in Array("new".utf8) }
        #expect(try reader.lock() == .passphrase)
        #expect(try reader.secret(service: try ServiceName("s"), key: try KeychainKey("k")) == Data("v".utf8))
    }

    /// A store that opened the vault, after another store re-keys it: its next read says the
    /// vault was re-keyed, where a store that never opened it hears its passphrase is wrong.
    @Test func aStoreThatOpenedTheVaultBeforeAReKeyIsToldSo() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/vault.age"
        let (service, key) = (try ServiceName("s"), try KeychainKey("k"))
        let early = VaultStore(path: path, workFactor: 10) { _ in Array("old".utf8) }
        try early.setSecret(Data("v".utf8), service: service, key: key)
        let changer = VaultStore(path: path, workFactor: 10) { purpose in
            Array((purpose == .change ? "new" : "old").utf8)
        }
        #expect(try changer.changePassphrase())
        #expect(throws: KeychainError.vaultRekeyed(path: path)) { try early.secret(service: service, key: key) }
        let late = VaultStore(path: path, workFactor: 10) { _ in Array("old".utf8) }
        #expect(throws: KeychainError.wrongPassphrase(path: path)) { try late.secret(service: service, key: key) }
    }

    /// A store that opened a team vault with its identity, after another store turns the vault
    /// into a passphrase vault: it is told of the re-key, not that it lacks a passphrase.
    @Test func aStoreThatOpenedATeamVaultIsToldWhenItBecomesAPassphraseVault() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = "\(directory)/team.age"
        let (service, key) = (try ServiceName("s"), try KeychainKey("k"))
        let identity = VaultIdentity()
        let member = VaultStore(path: path, workFactor: 10, identities: [identity], passphrase: noPassphrase)
        try member.changeRecipients { _ in [try! VaultRecipient(identity.recipient)] }
        try member.setSecret(Data("v".utf8), service: service, key: key)
        let changer = VaultStore(path: path, workFactor: 10, identities: [identity]) { _ in Array("new".utf8) }
        #expect(try changer.changePassphrase())
        #expect(throws: KeychainError.vaultRekeyed(path: path)) { try member.secret(service: service, key: key) }
        let late = VaultStore(path: path, workFactor: 10, identities: [identity], passphrase: noPassphrase)
        #expect(throws: KeychainError.noPassphrase(detail: "none in this test")) {
            try late.secret(service: service, key: key)
        }
    }
}
