import Dispatch
import FoundationEssentials
import KeychainStore
import KeychainSystem

/// A change to one of a ``Keychain``'s items, from ``Keychain/changes(pollingEvery:)`` or
/// ``Keychain/watch(pollingEvery:_:)``.
public struct KeychainChange: Hashable, Sendable {
    public var kind: StoreChange.Kind
    /// The service of the item: the keychain's.
    public var service: ServiceName
    /// The key of the item.
    public var key: KeychainKey
    /// When the watcher saw the change.
    public var time: Date
    /// The program that wrote the item, when the backend records one.
    public var application: String?
    /// The write of this `Keychain` instance that made the change (numbered from 1, in the order
    /// of the writes): the seed's transaction id, so an instance can ignore its own echoes. Nil
    /// for a change made by another instance or program.
    public var transactionID: UInt64?

    /// Whether this `Keychain` instance made the change.
    public var isOwn: Bool { transactionID != nil }
}

/// A running ``Keychain/watch(pollingEvery:_:)``; the watching stops when every watch of the
/// instance is cancelled.
public final class KeychainWatch: Sendable {
    private let stop: @Sendable () -> Void
    private let stopped = Locked(false)

    init(stop: @escaping @Sendable () -> Void) { self.stop = stop }

    /// Stops this watch: its handler is not called after this returns (unless it is called from
    /// that handler).
    public func cancel() {
        guard
            stopped.withLock({ done in
                defer { done = true }
                return !done
            })
        else { return }
        stop()
    }
}

/// A `Keychain`'s watching: the backend's watch, shared by every subscriber, and the writes of
/// this instance whose echoes are still to come.
struct Watching {
    typealias Handler = @Sendable (Result<KeychainChange, KeychainError>) -> Void

    struct Expectation {
        var transaction: UInt64
        /// The keys it may change; nil: any key of the service (reset).
        var keys: Set<KeychainKey>?
        var kinds: Set<StoreChange.Kind>
        /// How many changes it makes: unknown (Int.max) until the write returns.
        var remaining = Int.max
        var matched = 0
        var deadline: DispatchTime
    }

    var watch: StoreWatch?
    var interval = 1.0
    var subscribers: [UInt64: Handler] = [:]
    var nextSubscriber: UInt64 = 1
    var expected: [Expectation] = []
    var nextTransaction: UInt64 = 1
}

extension Keychain {
    /// How long an expected echo of this instance's write is waited for, beyond the poll interval.
    static let echoWindow = 10.0

    /// Calls `handler` with every change to this service's items, by any program, until the
    /// returned watch is cancelled or the backend fails (then with that error, last). While any
    /// watch runs, each change also removes the key from this instance's cache, so a cached read
    /// never outlives another program's write by more than the watcher's latency (a Secret
    /// Service signal: milliseconds; the vault: a file notification; polling: `interval`).
    /// - Parameters:
    ///   - interval: seconds between two looks where the backend must be polled (OpenBao; the
    ///     Secret Service's items changed by `SetSecret` alone, which emits no signal).
    ///   - handler: called on the watcher's thread, one change at a time, in order.
    /// - Throws: ``KeychainError`` when the backend cannot be watched.
    public func watch(
        pollingEvery interval: Double = 1,
        _ handler: @escaping @Sendable (Result<KeychainChange, KeychainError>) -> Void
    ) throws -> KeychainWatch {
        // Subscribed first, so that no change reported once the backend's watch runs is missed.
        let id = watching.withLock { state in
            defer { state.nextSubscriber += 1 }
            state.subscribers[state.nextSubscriber] = handler
            return state.nextSubscriber
        }
        do {
            try watchStart.withLock { _ throws in
                guard watching.withLock({ $0.watch == nil }) else { return }
                let watch = try store.watch(service: service, interval: interval) { [weak self] event in
                    self?.received(event)
                }
                watching.withLock {
                    $0.watch = watch
                    $0.interval = interval
                }
            }
        } catch {
            unsubscribe(id)
            throw error
        }
        return KeychainWatch { [weak self] in self?.unsubscribe(id) }
    }

    /// The changes to this service's items, by any program, as ``watch(pollingEvery:_:)`` reports
    /// them; watching starts before this returns, so no later change is missed, and stops when the
    /// stream is dropped or its task cancelled. The stream ends by throwing the backend's error.
    ///
    /// ```swift
    /// for try await change in try await keychain.changes() where !change.isOwn {
    ///     print(change.kind, change.key)
    /// }
    /// ```
    public func changes(pollingEvery interval: Double = 1) async throws -> AsyncThrowingStream<
        KeychainChange, any Error
    > {
        let (stream, continuation) = AsyncThrowingStream<KeychainChange, any Error>.makeStream()
        let watch = try await offCooperativePool {
            try self.watch(pollingEvery: interval) { result in
                switch result {
                case .success(let change): continuation.yield(change)
                case .failure(let error): continuation.finish(throwing: error)
                }
            }
        }
        continuation.onTermination = { _ in watch.cancel() }
        return stream
    }

    private func unsubscribe(_ id: UInt64) {
        let watch = watching.withLock { state -> StoreWatch? in
            state.subscribers[id] = nil
            guard state.subscribers.isEmpty, let watch = state.watch else { return nil }
            state.watch = nil
            state.expected.removeAll()
            return watch
        }
        watch?.cancel()
    }

    private func received(_ event: WatchEvent) {
        switch event {
        case .change(let change):
            guard change.service == service.rawValue, let key = try? KeychainKey(change.key) else { return }
            invalidate(key)
            let (handlers, transaction) = watching.withLock { state in
                (Array(state.subscribers.values), state.claimEcho(of: key, kind: change.kind))
            }
            let result = KeychainChange(
                kind: change.kind, service: service, key: key, time: change.time, application: change.application,
                transactionID: transaction)
            for handler in handlers { handler(.success(result)) }
        case .failure(let error):
            // Unwatched, the cache could go stale: it starts empty, as a new instance's would.
            removeCachedSecrets()
            let handlers = watching.withLock { state in
                defer {
                    state.subscribers.removeAll()
                    state.watch = nil
                    state.expected.removeAll()
                }
                return Array(state.subscribers.values)
            }
            for handler in handlers { handler(.failure(error)) }
        }
    }

    /// Runs `write`, and while watching, marks the changes it is expected to cause (as many as it
    /// says it made, to `keys` of this service, nil: any) as this instance's own.
    func recordingEchoes<Result>(
        of keys: Set<KeychainKey>?, _ kinds: Set<StoreChange.Kind>, _ write: () throws -> (Result, changes: Int)
    ) throws -> Result {
        let transaction = watching.withLock { state -> UInt64? in
            guard state.watch != nil else { return nil }
            defer { state.nextTransaction += 1 }
            state.expected.append(
                Watching.Expectation(
                    transaction: state.nextTransaction, keys: keys, kinds: kinds,
                    deadline: .now() + Self.echoWindow + state.interval))
            return state.nextTransaction
        }
        guard let transaction else { return try write().0 }
        var expected = 0
        defer {
            watching.withLock { state in
                guard let index = state.expected.firstIndex(where: { $0.transaction == transaction }) else { return }
                state.expected[index].remaining = expected
                if state.expected[index].matched >= expected { state.expected.remove(at: index) }
            }
        }
        let result: Result
        (result, expected) = try write()
        return result
    }
}

extension Watching {
    /// The transaction of this instance's write that a change to `key` is the echo of, if any.
    mutating func claimEcho(of key: KeychainKey, kind: StoreChange.Kind) -> UInt64? {
        let now = DispatchTime.now()
        expected.removeAll { $0.deadline < now }
        guard
            let index = expected.firstIndex(where: {
                ($0.keys?.contains(key) ?? true) && $0.kinds.contains(kind) && $0.matched < $0.remaining
            })
        else { return nil }
        expected[index].matched += 1
        let transaction = expected[index].transaction
        if expected[index].matched >= expected[index].remaining { expected.remove(at: index) }
        return transaction
    }
}
