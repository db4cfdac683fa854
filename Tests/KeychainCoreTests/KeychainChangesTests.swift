import Foundation
import Testing

@testable import KeychainCore

/// A store that delegates to an in-memory one and has no `watch` of its own: it watches with the
/// protocol's default (polling).
final class PlainStore: ForwardingStore {
    let inner = InMemorySecretStore()
}

/// A store that delegates to an in-memory one, counts reads and running watches, and lets a test
/// make its watch fail.
final class WatchedStore: ForwardingStore {
    let inner = InMemorySecretStore()
    private let state = Locked((reads: 0, watches: 0, failure: KeychainError?.none))

    /// Broadcast as each watch ends.
    private let watchEnded = NSCondition()

    var reads: Int { state.withLock { $0.reads } }
    var runningWatches: Int { state.withLock { $0.watches } }

    /// Waits up to `timeout` seconds for every watch to have ended; true if they did.
    func noWatchRuns(within timeout: Double) -> Bool {
        let deadline = Date() + timeout
        watchEnded.lock()
        defer { watchEnded.unlock() }
        while runningWatches > 0 {
            if !watchEnded.wait(until: deadline) { return runningWatches == 0 }
        }
        return true
    }
    /// The running watches report `error` and end.
    func fail(with error: KeychainError) { state.withLock { $0.failure = error } }

    func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        state.withLock { $0.reads += 1 }
        return try inner.secret(service: service, key: key)
    }

    func watch(service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void)
        throws(KeychainError)
        -> StoreWatch
    {
        let inner = try inner.watch(service: service, interval: interval, report: report)
        state.withLock { $0.watches += 1 }
        return try StoreWatch.start { watch, ready in
            ready(nil)
            defer {
                inner.cancel()
                self.state.withLock { $0.watches -= 1 }
                self.watchEnded.lock()
                self.watchEnded.broadcast()
                self.watchEnded.unlock()
            }
            while !watch.isCancelled {
                if let failure = self.state.withLock({ $0.failure }) { return report(.failure(failure)) }
                watch.sleep(0.02)
            }
        }
    }
}

// Swift Testing counts a test's time from its start event, waits for a thread of the cooperative
// pool included: in a full run on two CPUs, this suite's tests all waited about 700 s for one.
// Every wait below has its own bound; the limit only catches a hang, well before CI's.
@Suite("Keychain: watching changes", .timeLimit(.minutes(30)))
struct KeychainChangesTests {
    let service = try! ServiceName("watched")
    let key = try! KeychainKey("k")

    @Test func ownWritesCarryTransactionIDsAndOthersDoNot() throws {
        try awaitingOffThePool {
            let store = InMemorySecretStore()
            let mine = Keychain(service: service, store: store)
            let theirs = Keychain(service: service, store: store)
            let changes = try await mine.changes()
            try await mine.set("one", for: key)
            try await theirs.set("two", for: key)
            try await Keychain(service: try ServiceName("elsewhere"), store: store).set("x", for: key)
            #expect(try await mine.delete(key))
            var seen: [String] = []
            for try await change in changes {
                seen.append(
                    "\(change.kind) \(change.key) \(change.transactionID.map(String.init) ?? "-") \(change.isOwn)")
                if seen.count == 3 { break }
            }
            #expect(seen == ["created k 1 true", "changed k - false", "deleted k 2 true"])
        }
    }

    /// The watch example of docs/library.md, with a store another `Keychain` writes to.
    @Test func theReadmeWatchExampleRuns() throws {
        try awaitingOffThePool {
            let store = InMemorySecretStore()
            let keychain = Keychain(service: try ServiceName("my-app"), store: store)
            let other = Keychain(service: try ServiceName("my-app"), store: store)
            var printed: [String] = []
            let changes = try await keychain.changes()
            try await keychain.set("mine", for: try KeychainKey("own-write"))
            try await other.set("theirs", for: try KeychainKey("github-token"))
            for try await change in changes where !change.isOwn {
                printed.append("\(change.kind) \(change.key)")
                break
            }
            #expect(printed == ["created github-token"])
        }
    }

    @Test func anotherWriterInvalidatesTheCacheOnlyWhileWatching() throws {
        let store = WatchedStore()
        let reader = Keychain(service: service, store: store)
        let writer = Keychain(service: service, store: store)
        try writer.set("v1", for: key)
        #expect(try reader.string(for: key) == "v1")
        try writer.set("v2", for: key)
        #expect(try reader.string(for: key) == "v1", "not watching: the cache-aside read is served from memory")

        let seen = DispatchSemaphore(value: 0)
        let watch = try reader.watch { _ in seen.signal() }
        defer { watch.cancel() }
        reader.removeCachedSecrets()
        #expect(try reader.string(for: key) == "v2")
        let reads = store.reads
        #expect(try reader.string(for: key) == "v2")
        #expect(store.reads == reads, "a second read is cached")
        try writer.set("v3", for: key)
        #expect(seen.wait(timeout: .now() + 10) == .success)
        #expect(try reader.string(for: key) == "v3")
    }

    @Test func theDefaultWatchPollsAndReportsWhatDiffers() throws {
        let store = PlainStore()
        let keychain = Keychain(service: service, store: store)
        let log = Locked([String]())
        let arrived = DispatchSemaphore(value: 0)
        let watch = try keychain.watch(pollingEvery: 0.05) { result in
            if case .success(let change) = result { log.withLock { $0.append("\(change.kind) \(change.isOwn)") } }
            arrived.signal()
        }
        defer { watch.cancel() }
        for step in 0..<3 {
            switch step {
            case 0: try keychain.set("a", for: key)
            case 1: try store.inner.setSecret(Data("b".utf8), service: service, key: key)
            default: try keychain.delete(key)
            }
            #expect(arrived.wait(timeout: .now() + 10) == .success)
        }
        #expect(log.withLock { $0 } == ["created true", "changed false", "deleted true"])
    }

    @Test func aFailureEndsTheStreamWithTheErrorAndEmptiesTheCache() throws {
        try awaitingOffThePool {
            let store = WatchedStore()
            let keychain = Keychain(service: service, store: store)
            try await keychain.set("v", for: key)
            let changes = try await keychain.changes()
            #expect(try await keychain.string(for: key) == "v")
            let reads = store.reads
            store.fail(with: .noSecretService(detail: "gone"))
            await #expect(throws: KeychainError.self) {
                for try await _ in changes {}
            }
            #expect(try await keychain.string(for: key) == "v")
            #expect(store.reads == reads + 1, "the cache was emptied")
        }
    }

    @Test func droppingEveryStreamStopsTheBackendsWatch() throws {
        try awaitingOffThePool {
            let store = WatchedStore()
            let keychain = Keychain(service: service, store: store)
            var first: AsyncThrowingStream<KeychainChange, any Error>? = try await keychain.changes()
            var second: AsyncThrowingStream<KeychainChange, any Error>? = try await keychain.changes()
            #expect(store.runningWatches == 1, "one backend watch shared by both")
            first = nil
            #expect(store.runningWatches == 1)
            second = nil
            _ = (first, second)
            #expect(store.noWatchRuns(within: 10))
        }
    }

    @Test func aKeychainThatGoesAwayStopsItsWatch() throws {
        let store = WatchedStore()
        var keychain: Keychain? = Keychain(service: service, store: store)
        let watch = try keychain!.watch { _ in }
        #expect(store.runningWatches == 1)
        keychain = nil
        #expect(store.noWatchRuns(within: 10))
        watch.cancel()  // harmless once the keychain is gone
    }

    /// Many tasks write, read and watch one keychain at once: every write is reported to every
    /// watcher exactly once, as this instance's own, and every read returns a value some write stored.
    @Test func manyTasksWritingReadingAndWatchingAtOnce() throws {
        try awaitingOffThePool {
            let keychain = Keychain(service: service, store: InMemorySecretStore())
            let writers = 8
            let writesEach = 25
            let streams = [try await keychain.changes(), try await keychain.changes()]
            try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for stream in streams {
                    group.addTask {
                        var ids: [UInt64] = []
                        for try await change in stream {
                            #expect(change.isOwn)
                            ids.append(change.transactionID ?? 0)
                            if ids.count == writers * writesEach { break }
                        }
                        return ids
                    }
                }
                for writer in 0..<writers {
                    group.addTask {
                        let key = try KeychainKey("w\(writer)")
                        for index in 0..<writesEach { try await keychain.set("\(writer)-\(index)", for: key) }
                        return []
                    }
                    group.addTask {
                        let key = try KeychainKey("w\(writer)")
                        for _ in 0..<writesEach {
                            if let value = try await keychain.string(for: key) {
                                #expect(value.hasPrefix("\(writer)-"))
                            }
                        }
                        return []
                    }
                }
                var watched: [[UInt64]] = []
                for try await ids in group where !ids.isEmpty { watched.append(ids) }
                #expect(watched.count == 2)
                for ids in watched { #expect(Set(ids) == Set(1...UInt64(writers * writesEach))) }
            }
            for writer in 0..<writers {
                #expect(try await keychain.string(for: try KeychainKey("w\(writer)")) == "\(writer)-\(writesEach - 1)")
            }
        }
    }
}
