import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import KeychainCore

/// `replaceSecret`: what `edit` writes and `mv` removes, only over the secret the caller read,
/// on every store; raced by threads where the backend decides atomically.
@Suite("SecretStore.replaceSecret: a write over what the caller read, never over another's")
struct ReplaceSecretTests {
    /// A secret replaced keeps the item's details (its label, attributes), where the store keeps them.
    @Test(arguments: [StoreKind.inMemory, .vault, .treeVault, .openbao])
    func aReplacedSecretKeepsItsDetails(on kind: StoreKind) throws {
        let store = try #require(try kind.makeStore() as? any DetailedSecretStore)
        let address = SecretAddress(service: try ServiceName(uniqueService()), key: try KeychainKey("k"))
        let details = ItemDetails(
            attributes: ["service": "s", "username": "u"], label: "Mine", contentType: "text/plain")
        _ = try store.addItem(Data("old".utf8), details: details, at: address)
        #expect(
            try store.replaceSecret(
                service: address.service, key: address.key, expected: Data("old".utf8), with: Data("new".utf8)))
        let item = try #require(try store.detailedItems(in: [address.service]).first { $0.address == address })
        #expect(item.details == details)
        #expect(try store.secret(service: address.service, key: address.key) == Data("new".utf8))
    }

    /// Eight threads each read a counter and write it plus one over what they read, 5 times: as
    /// many writes are accepted as the counter went up, so that no accepted write overwrote
    /// another (the vault decides under its lock, OpenBao by check-and-set).
    @Test(arguments: [StoreKind.inMemory, .vault, .treeVault, .openbao])
    func racingWritersNeverOverwriteEachOther(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("counter")
        try store.setSecret(Data("0".utf8), service: service, key: key)
        let accepted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<5 {
                guard let read = try? store.secret(service: service, key: key),
                    let count = Int(String(decoding: read, as: UTF8.self))
                else { continue }
                let next = Data(String(count + 1).utf8)
                if (try? store.replaceSecret(service: service, key: key, expected: read, with: next)) == true {
                    accepted.withLock { $0 += 1 }
                }
            }
        }
        let final = try #require(try store.secret(service: service, key: key))
        #expect(accepted.withLock { $0 } > 0)
        #expect(Int(String(decoding: final, as: UTF8.self)) == accepted.withLock { $0 })
    }
}

// In the suite that may call libsecret in the test process (the Secret Service case).
extension SecretServiceStoreTests {
    /// Every outcome on every store: a write over the secret expected, a refusal (nothing
    /// written) over another one, an add only where nothing is, a removal only of the secret
    /// expected.
    @Test(arguments: StoreKind.allCases)
    func writesOnlyOverTheSecretExpected(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        let key = try KeychainKey("edited")
        func stored() throws -> Data? { try store.secret(service: service, key: key) }
        #expect(
            try store.replaceSecret(service: service, key: key, expected: Data("x".utf8), with: Data("y".utf8)) == false
        )
        #expect(try stored() == nil)
        #expect(try store.replaceSecret(service: service, key: key, expected: nil, with: nil))
        #expect(try store.replaceSecret(service: service, key: key, expected: nil, with: Data("one".utf8)))
        #expect(try store.replaceSecret(service: service, key: key, expected: nil, with: Data("two".utf8)) == false)
        #expect(try store.replaceSecret(service: service, key: key, expected: nil, with: nil) == false)
        #expect(try stored() == Data("one".utf8))
        #expect(
            try store.replaceSecret(service: service, key: key, expected: Data("two".utf8), with: Data("3".utf8))
                == false)
        #expect(try stored() == Data("one".utf8))
        #expect(try store.replaceSecret(service: service, key: key, expected: Data("one".utf8), with: Data("two".utf8)))
        #expect(try stored() == Data("two".utf8))
        #expect(try store.replaceSecret(service: service, key: key, expected: Data("one".utf8), with: nil) == false)
        #expect(try stored() == Data("two".utf8))
        #expect(try store.replaceSecret(service: service, key: key, expected: Data("two".utf8), with: nil))
        #expect(try stored() == nil)
        _ = try store.deleteAll(service: service)
    }
}

extension SecretServiceStoreTests {
    /// `item(service:key:)` gives what a listing of the service gives for that item (the Secret
    /// Service finds it by its own search), and nil for none, on every store.
    @Test(arguments: StoreKind.allCases)
    func oneItemIsWhatTheListingGives(on kind: StoreKind) throws {
        let store = try kind.makeStore()
        let service = try ServiceName(uniqueService())
        for key in ["a", "b"] { try store.setSecret(Data(key.utf8), service: service, key: try KeychainKey(key)) }
        let listed = try #require(try store.items(service: service).first { $0.key == "b" })
        #expect(try store.item(service: service, key: try KeychainKey("b")) == listed)
        #expect(try store.item(service: service, key: try KeychainKey("none")) == nil)
        _ = try store.deleteAll(service: service)
    }
}
