import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import KeychainCore

/// The stores serve keeps its items in (DetailedSecretStore), on their own: writes that decide
/// what they overwrite on what the store holds at that moment, never on a caller's view, raced by
/// threads as serve and keychain-cli race each other.
@Suite("DetailedSecretStore: adds and updates decided on what the store holds")
struct DetailedStoreTests {
    static let kinds: [StoreKind] = [.inMemory, .vault, .openbao]

    private func detailedStore(_ kind: StoreKind) throws -> any DetailedSecretStore {
        try #require(try kind.makeStore() as? any DetailedSecretStore)
    }

    private func details(_ label: String) -> ItemDetails {
        ItemDetails(
            attributes: ["service": "s", "username": "u", "label": label], label: label, contentType: "text/plain")
    }

    /// Of 8 threads adding at one address, exactly one adds; the store holds its secret and details,
    /// and the item it answered is the one a listing gives (what keeps serve's own writes from
    /// coming back as changes).
    @Test(arguments: kinds)
    func ofRacingAddsExactlyOneStores(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        let address = SecretAddress(service: try ServiceName(uniqueService()), key: try KeychainKey("k"))
        let winners = Mutex<[(Int, DetailedItem)]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            if let item = try? store.addItem(Data("v\(thread)".utf8), details: details("t\(thread)"), at: address) {
                winners.withLock { $0.append((thread, item)) }
            }
        }
        let (winner, added) = try #require(winners.withLock { $0.count == 1 ? $0.first : nil })
        #expect(try store.secret(service: address.service, key: address.key) == Data("v\(winner)".utf8))
        let listed = try #require(try store.detailedItems().first { $0.address == address })
        #expect(listed.details == details("t\(winner)") && listed.revision == added.revision)
        #expect(try store.addItem(Data("late".utf8), details: details("late"), at: address) == nil)
    }

    /// An update reads what the store holds now (a secret `set` wrote, with no details), and a move
    /// goes only to a free address, keeping the item's creation date; a missing item is missing.
    @Test(arguments: kinds)
    func updatesReadTheStoreAndMoveOnlyToAFreeAddress(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        let service = try ServiceName(uniqueService())
        let (a, b, c) = try (
            SecretAddress(service: service, key: KeychainKey("a")),
            SecretAddress(service: service, key: KeychainKey("b")),
            SecretAddress(service: try ServiceName(uniqueService()), key: KeychainKey("c"))
        )
        try store.setSecret(Data("from set".utf8), service: a.service, key: a.key)
        try store.setSecret(Data("b's".utf8), service: b.service, key: b.key)
        var seen: ItemContents?
        let update = try store.updateItem(at: a, movingTo: nil) { current in
            seen = current
            return ItemContents(secret: current.secret + Data("!".utf8), details: details("one"))
        }
        #expect(seen?.secret == Data("from set".utf8) && seen?.details == nil)
        guard case .updated(let updated) = update else { return #expect(Bool(false), "\(update)") }
        #expect(updated.details == details("one"))

        #expect(try store.updateItem(at: a, movingTo: b) { $0 } == .destinationTaken)
        #expect(try store.secret(service: b.service, key: b.key) == Data("b's".utf8))
        let created = try store.detailedItems().first { $0.address == a }?.created
        guard case .updated(let moved) = try store.updateItem(at: a, movingTo: c, { $0 }) else {
            return #expect(Bool(false))
        }
        #expect(moved.address == c && moved.details == details("one"))
        #expect(try store.secret(service: a.service, key: a.key) == nil)
        #expect(try store.secret(service: c.service, key: c.key) == Data("from set!".utf8))
        if kind != .openbao {  // OpenBao keeps one creation date per service (secret)
            #expect(try store.detailedItems().first { $0.address == c }?.created == created)
        }
        #expect(try store.updateItem(at: a, movingTo: nil) { $0 } == .missing)
    }

    /// A move and 6 adds racing for the same address, 10 times: exactly one of them gets it, and
    /// nothing is lost (the moved item is at one of its two addresses, with its secret).
    @Test(arguments: kinds)
    func aMoveAndAddsRacingForOneAddressLoseNothing(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        for round in 0..<10 {
            let service = try ServiceName(uniqueService())
            let (source, target) = try (
                SecretAddress(service: service, key: KeychainKey("src")),
                SecretAddress(service: try ServiceName("\(service.rawValue)-to"), key: KeychainKey("dst"))
            )
            _ = try store.addItem(Data("moved".utf8), details: details("m"), at: source)
            let winners = Mutex(0)
            let moved = Mutex(false)
            DispatchQueue.concurrentPerform(iterations: 7) { thread in
                if thread == 0 {
                    if case .updated = try? store.updateItem(at: source, movingTo: target, { $0 }) {
                        moved.withLock { $0 = true }
                        winners.withLock { $0 += 1 }
                    }
                } else if (try? store.addItem(Data("added".utf8), details: details("a"), at: target)) != nil {
                    winners.withLock { $0 += 1 }
                }
            }
            #expect(winners.withLock { $0 } == 1, "round \(round)")
            let movedSecret = try store.secret(
                service: moved.withLock { $0 } ? target.service : source.service,
                key: moved.withLock { $0 } ? target.key : source.key)
            #expect(movedSecret == Data("moved".utf8), "round \(round)")
        }
    }

    /// A delete removes the item only if what is there now is the item the caller means, and an
    /// update whose change declines writes nothing: how serve leaves alone an item another
    /// program stored after deleting the one serve knew.
    @Test(arguments: kinds)
    func deletesAndUpdatesLeaveAnItemTheCallerDoesNotMean(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        let address = SecretAddress(service: try ServiceName(uniqueService()), key: try KeychainKey("k"))
        _ = try store.addItem(Data("mine".utf8), details: details("m"), at: address)
        #expect(try store.deleteItem(at: address) { $0.details == nil } == false)
        #expect(try store.secret(service: address.service, key: address.key) == Data("mine".utf8))
        #expect(try store.deleteItem(at: address) { $0.details == details("m") })
        #expect(try store.secret(service: address.service, key: address.key) == nil)
        #expect(try store.deleteItem(at: address) { _ in true } == false)
        try store.setSecret(Data("theirs".utf8), service: address.service, key: address.key)
        #expect(try store.updateItem(at: address, movingTo: nil) { _ in nil } == .missing)
        #expect(try store.secret(service: address.service, key: address.key) == Data("theirs".utf8))
    }

    /// The collection's label is kept with the items: another store on the same backend reads it.
    @Test(arguments: kinds)
    func theCollectionsLabelIsKept(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        #expect(try store.collectionLabel() == nil)
        try store.setCollectionLabel("Team secrets")
        let again: any DetailedSecretStore =
            switch store {
            case let vault as VaultStore: VaultStore(path: vault.path, workFactor: 10) { _ in Array("passphrase".utf8) }
            case let openBao as OpenBaoStore: OpenBaoStore(configuration: openBao.configuration, timeout: 10)
            default: store
            }
        #expect(try again.collectionLabel() == "Team secrets")
        #expect(try again.items(service: nil).isEmpty)
    }

    /// The items of some services (what serve reads again when its watcher names them) are those
    /// services' items of the whole listing, details, dates and revisions alike; a service with
    /// no item has none.
    @Test(arguments: kinds)
    func theItemsOfSomeServicesAreThoseOfTheWholeListing(on kind: StoreKind) throws {
        let store = try detailedStore(kind)
        let services = try (0..<3).map { _ in try ServiceName(uniqueService()) }
        for (index, service) in services.enumerated() {
            for key in ["a", "b"] {
                try store.setSecret(
                    Data("\(index)\(key)".utf8), details: details(key), service: service, key: KeychainKey(key))
            }
        }
        let chosen: Set = [services[0], services[2], try ServiceName(uniqueService())]
        let some = try store.detailedItems(in: chosen)
        let all = try store.detailedItems().filter { chosen.contains($0.address.service) }
        #expect(some.count == 4)
        #expect(Set(some) == Set(all))
        #expect(try store.detailedItems(in: []).isEmpty)
    }
}
