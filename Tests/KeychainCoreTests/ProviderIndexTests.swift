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

    /// An item written without details (by `keychain-cli set`) shows what keychain-cli's Secret
    /// Service backend gives its items, though the index keeps none of it, and is found by it.
    @Test func anItemWithoutDetailsShowsKeychainCLIsAttributes() throws {
        var index = ProviderIndex()
        let address = SecretAddress(service: try ServiceName("svc"), key: try KeychainKey("user"))
        let number = index.put(DetailedItem(address: address, details: nil, created: nil, modified: nil)).number
        let expected = [
            "service": "svc", "username": "user", "application": "keychain-cli",
            "xdg:schema": "org.freedesktop.Secret.Generic",
        ]
        #expect(index.items[number]?.details.attributes == expected)
        #expect(index.items[number]?.details.label == ItemInfo.defaultLabel(service: address.service, key: address.key))
        #expect(index.items[number]?.storedDetails == nil)
        #expect(index.search(expected).map(\.number) == [number])
        #expect(index.search(["application": "keychain-cli", "username": "user"]).map(\.number) == [number])
        #expect(index.search(["xdg:schema": "other"]).isEmpty)
    }

    /// Searches naming a service and a username look at those items only (an index of them):
    /// after any sequence of puts, replacements, moves and removals they find exactly what a scan
    /// of every item finds, in the same order.
    @Test func searchesFindWhatAScanOfEveryItemFinds() throws {
        var index = ProviderIndex()
        var random = SeededGenerator(seed: 45)
        let services = ["a", "b", ProviderIndex.otherItemsService]
        func attributes() -> [String: String] {
            var attributes: [String: String] = [:]
            if Int.random(in: 0..<5, using: &random) > 0 {
                attributes["service"] = ["a", "b"].randomElement(using: &random)
            }
            if Int.random(in: 0..<5, using: &random) > 0 {
                attributes["username"] = ["k", "l"].randomElement(using: &random)
            }
            if Bool.random(using: &random) { attributes["extra"] = ["x", "y"].randomElement(using: &random) }
            // What an item stored without details shows (its attributes are made when asked).
            if Int.random(in: 0..<4, using: &random) == 0 {
                attributes["application"] = ["keychain-cli", "other"].randomElement(using: &random)
            }
            if Int.random(in: 0..<4, using: &random) == 0 {
                attributes["xdg:schema"] = "org.freedesktop.Secret.Generic"
            }
            return attributes
        }
        func entry(revision: Int) throws -> DetailedItem {
            let address = SecretAddress(
                service: try ServiceName(services.randomElement(using: &random)!),
                key: try KeychainKey(["k", "l", "m", "n"].randomElement(using: &random)!))
            let details =
                Bool.random(using: &random)
                ? ItemDetails(attributes: attributes(), label: "L", contentType: "text/plain") : nil
            return DetailedItem(address: address, details: details, created: nil, modified: nil, revision: revision)
        }
        for step in 0..<600 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5: index.put(try entry(revision: step))
            case 5..<7:
                if let number = index.items.keys.randomElement(using: &random) {
                    index.put(try entry(revision: step), as: number)
                }
            case 7..<9: if let number = index.items.keys.randomElement(using: &random) { index.remove(number) }
            default: _ = index.replace(with: try (0..<4).map { _ in try entry(revision: step) })
            }
            for _ in 0..<4 {
                let query = attributes()
                let scanned = index.items.values.filter { item in
                    query.allSatisfy { item.details.attributes[$0.key] == $0.value }
                }.sorted { $0.number < $1.number }
                #expect(index.search(query).map(\.number) == scanned.map(\.number), "step \(step): \(query)")
            }
        }
    }
}

/// A reproducible sequence (SplitMix64), so that a failure repeats.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
