import Foundation
import TestSupport
import Testing

@testable import KeychainCore

/// `ItemTransfer` between two stores: what a vault or a tree vault keeps of an item (its secret,
/// details and dates) arrives whole, and a move leaves nothing behind.
@Suite("ItemTransfer: an item's secret, details and dates from one store to another")
struct ItemTransferTests {
    static let pairs: [(StoreKind, StoreKind)] = [(.vault, .treeVault), (.treeVault, .vault)]

    @Test(arguments: pairs)
    func detailsAndDatesArriveWhole(from sourceKind: StoreKind, to targetKind: StoreKind) throws {
        let (source, target) = (try sourceKind.makeStore(), try targetKind.makeStore())
        let transfer = ItemTransfer(source: source, target: target, sameStore: false)
        let service = try ServiceName(uniqueService())
        let (from, copy, moved) = try (
            SecretAddress(service: service, key: KeychainKey("old")),
            SecretAddress(service: service, key: KeychainKey("copy")),
            SecretAddress(service: service, key: KeychainKey("moved"))
        )
        let details = ItemDetails(
            attributes: ["service": service.rawValue, "username": "old", "extra": "yes"],
            label: ItemInfo.defaultLabel(service: service, key: from.key), contentType: "text/plain")
        let dates = ItemDates(
            created: Date(timeIntervalSince1970: 978_307_200), modified: Date(timeIntervalSince1970: 1_000_000_000))
        #expect(
            try source.storeSecret(
                Data("s3cret".utf8), details: details, dates: dates, service: service, key: from.key, replacing: false))

        #expect(try transfer.copy(from, to: copy, replacing: false) == .done)
        #expect(try transfer.copy(from, to: copy, replacing: false) == .destinationTaken)
        #expect(try transfer.move(from, to: moved, replacing: false) == .done)
        #expect(try source.secret(service: service, key: from.key) == nil)
        for address in [copy, moved] {
            #expect(try target.secret(service: service, key: address.key) == Data("s3cret".utf8))
            let item = try #require(try target.item(service: service, key: address.key))
            #expect(item.created == dates.created && item.modified == dates.modified, "\(address.key)")
            let carried = try #require(try target.itemDetails(service: service, key: address.key))
            // The label keychain-cli gave and the attributes that named the source name the copy.
            #expect(carried.label == ItemInfo.defaultLabel(service: service, key: address.key))
            #expect(
                carried.attributes == ["service": service.rawValue, "username": address.key.rawValue, "extra": "yes"])
        }
    }
}
