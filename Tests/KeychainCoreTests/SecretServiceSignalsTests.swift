import Testing

@testable import KeychainCore
@testable import KeychainSecretService

/// The Secret Service watcher reads an item once per batch of its signals, for the strongest
/// reason among them, and anew after each deletion.
@Suite("Secret Service signals: one read per item and batch")
struct SecretServiceSignalsTests {
    private func described(_ signals: [(String, String)]) -> [String] { signals.map { "\($0.0) \($0.1)" } }

    /// KeePassXC's creation of one item: ItemCreated, then an ItemChanged per property it sets,
    /// each sent again on the alias's path (the watcher gets the item's path from both).
    @Test func aCreationAnnouncedManyTimesIsOneRead() {
        let batch =
            [("ItemCreated", "/i")] + Array(repeating: ("ItemChanged", "/i"), count: 21) + [("ItemCreated", "/i")]
        #expect(described(SignalWatcher.coalesced(batch)) == ["ItemCreated /i"])
    }

    @Test func keychainCLIsSecretChangedWinsAndADeletionStartsAnotherRead() {
        let batch = [
            ("ItemChanged", "/a"), ("SecretChanged", "/a"), ("ItemChanged", "/b"), ("ItemChanged", "/a"),
            ("ItemDeleted", "/a"), ("ItemCreated", "/a"), ("ItemChanged", "/a"), ("ItemDeleted", "/a"),
        ]
        #expect(
            described(SignalWatcher.coalesced(batch)) == [
                "SecretChanged /a", "ItemChanged /b", "ItemDeleted /a", "ItemCreated /a", "ItemDeleted /a",
            ])
    }
}
