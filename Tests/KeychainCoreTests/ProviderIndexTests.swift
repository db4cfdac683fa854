import Foundation
import Testing

@testable import KeychainCore
@testable import KeychainProvider

/// serve's index of the items: made what the store holds, for every service or for the services
/// its watcher named.
@Suite("ProviderIndex: the view serve answers searches from")
struct ProviderIndexTests {
    private func item(_ service: String, _ key: String, revision: Int, label: String = "L") throws -> DetailedItem {
        DetailedItem(
            address: SecretAddress(service: try ServiceName(service), key: try KeychainKey(key)),
            details: ItemDetails(
                attributes: ["service": service, "username": key], label: label, contentType: "text/plain"),
            created: Date(timeIntervalSince1970: 1_000), modified: Date(timeIntervalSince1970: 2_000),
            revision: revision)
    }

    /// An item put as the store answered a write, then listed as the store holds it, is no change:
    /// serve's own write that comes back through the watcher sends no signal.
    @Test func anItemAsTheStoreAnsweredItsWriteIsNoChange() throws {
        var index = ProviderIndex()
        let written = try item("a", "k", revision: 7)
        let number = index.put(written).number
        let (added, changed, removed) = index.replace(with: [written], within: [try ServiceName("a")])
        #expect(added.isEmpty && changed.isEmpty && removed.isEmpty)
        #expect(index.items[number]?.revision == 7)
        // Another program's write (a new revision) is a change.
        let rewritten = try item("a", "k", revision: 8)
        #expect(index.replace(with: [rewritten], within: [try ServiceName("a")]).changed == [number])
    }

    /// A reload of some services adds, changes and removes their items only: the items of other
    /// services stay, though the listing does not hold them.
    @Test func aReloadOfSomeServicesLeavesTheOthersAlone() throws {
        var index = ProviderIndex()
        let kept = index.put(try item("other", "x", revision: 1)).number
        let gone = index.put(try item("a", "old", revision: 1)).number
        let changed = index.put(try item("a", "k", revision: 1)).number
        let result = index.replace(
            with: [try item("a", "k", revision: 2), try item("b", "new", revision: 1)],
            within: [try ServiceName("a"), try ServiceName("b")])
        #expect(result.changed == [changed])
        #expect(result.removed == [gone])
        #expect(result.added.count == 1 && index.items[result.added[0]]?.address.service.rawValue == "b")
        #expect(index.items[kept] != nil)
        // The same listing for every service removes what it does not hold.
        #expect(
            index.replace(with: [try item("a", "k", revision: 2)]).removed.sorted() == [kept, result.added[0]].sorted())
    }
}
