import Foundation
import KeychainCore
import Testing

/// A test store that hands every call it does not implement itself to an in-memory store.
protocol ForwardingStore: SecretStore {
    var inner: InMemorySecretStore { get }
}

extension ForwardingStore {
    func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        try inner.secret(service: service, key: key)
    }
    func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try inner.setSecret(secret, service: service, key: key)
    }
    func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try inner.deleteSecret(service: service, key: key)
    }
    func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] { try inner.items(service: service) }
    func deleteAll(service: ServiceName) throws(KeychainError) -> Int { try inner.deleteAll(service: service) }
}

/// A store whose reads block until `expected` reads are under way at once (or until 10 s after
/// the first read came in, for all of them together): the async API passes only if its calls run on
/// threads of their own, not on the thread of the task that awaits them (the test's tasks share
/// one thread; on the cooperative pool they would share as many as the machine has cores).
final class RendezvousStore: ForwardingStore, @unchecked Sendable {
    let inner = InMemorySecretStore()
    let expected: Int
    /// Guards the three below; broadcast as each read comes in.
    private let arrived = NSCondition()
    private var inside = 0
    private var most = 0
    private var deadline: Date?

    init(expected: Int) { self.expected = expected }

    var mostAtOnce: Int {
        arrived.lock()
        defer { arrived.unlock() }
        return most
    }

    func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        arrived.lock()
        inside += 1
        most = max(most, inside)
        let deadline = self.deadline ?? Date().addingTimeInterval(10)
        self.deadline = deadline
        arrived.broadcast()
        while most < expected && arrived.wait(until: deadline) {}
        arrived.unlock()
        defer {
            arrived.lock()
            inside -= 1
            arrived.unlock()
        }
        return try inner.secret(service: service, key: key)
    }
}

/// Runs `body` in a task on an ``OwnThreadExecutor`` and waits here until it has ended: a
/// synchronous test whose async work never needs the cooperative pool. (An async test resumes on
/// the pool after each hop, behind every job the other suites' synchronous tests queued there,
/// which made a one-minute time limit run out while the work itself was done in milliseconds.)
func awaitingOffThePool(_ body: @escaping @Sendable () async throws -> Void) throws {
    let done = DispatchSemaphore(value: 0)
    let outcome = Locked<Result<Void, any Error>>(.success(()))
    Task(executorPreference: OwnThreadExecutor()) {
        do {
            try await body()
        } catch {
            outcome.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    try outcome.withLock { $0 }.get()
}

/// Runs tasks on one thread of its own (a serial dispatch queue), not on the cooperative pool,
/// which the other suites' synchronous tests keep busy while this suite runs.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "KeychainAsyncTests.executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

@Suite("Keychain: async API, exists, subscripts")
struct KeychainAsyncTests {
    @Test func blockingWorkNeverHoldsTheAwaitingTasksThread() async throws {
        let calls = max(32, ProcessInfo.processInfo.activeProcessorCount * 8)
        let executor = OwnThreadExecutor()
        let store = RendezvousStore(expected: calls)
        let keychain = Keychain(service: try ServiceName("async"), store: store)
        // Stored directly: the test's own awaits resume on the cooperative pool, which other
        // suites' synchronous tests may keep busy for minutes.
        try store.inner.setSecret(Data("v".utf8), service: keychain.service, key: KeychainKey("k"))
        try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<calls {
                group.addTask(executorPreference: executor) {
                    keychain.removeCachedSecrets()
                    return try await keychain.string(for: KeychainKey(index.isMultiple(of: 2) ? "k" : "missing"))
                }
            }
            var found = 0
            for try await value in group where value == "v" { found += 1 }
            #expect(found == (calls + 1) / 2)
        }
        // Every read was inside the store at once. Run where it is awaited, one would have been
        // at a time, each until the store's deadline ran out.
        #expect(store.mostAtOnce == calls)
    }

    @Test func manyTasksWritingAndReadingAtOnceLoseNothing() async throws {
        let keychain = Keychain(service: try ServiceName("busy"), store: InMemorySecretStore())
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    for round in 0..<50 {
                        let key = try KeychainKey("w\(writer)")
                        try await keychain.set("\(round)", for: key)
                        // A read after this task's own write sees it (or a later one of its own).
                        #expect(try await keychain.string(for: key) == "\(round)")
                        #expect(try await keychain.exists(key))
                    }
                }
            }
            try await group.waitForAll()
        }
        let items = try await keychain.items()
        #expect(items.map(\.key) == (0..<16).map { "w\($0)" }.sorted())
        for writer in 0..<16 { #expect(try keychain[string: KeychainKey("w\(writer)")] == "49") }
        #expect(try await keychain.reset() == 16)
        #expect(try await keychain.items().isEmpty)
    }

    @Test func existsReadsNoSecretAndSubscriptsThrow() throws {
        let store = CountingStore()
        let keychain = Keychain(service: try ServiceName("app"), store: store)
        let key = try KeychainKey("k")
        #expect(try !keychain.exists(key))
        try store.inner.setSecret(Data("1".utf8), service: keychain.service, key: key)
        #expect(try keychain.exists(key))
        // Served from the cache once read: no further call reaches the store.
        #expect(try keychain[string: key] == "1")
        let reads = store.count("secret")
        #expect(try keychain.exists(key) && keychain[key] == Data("1".utf8))
        #expect(store.count("secret") == reads)

        struct Credentials: Codable, Equatable { var user: String }
        try keychain.set(value: Credentials(user: "ci"), for: KeychainKey("creds"))
        #expect(try keychain[KeychainKey("creds"), as: Credentials.self] == Credentials(user: "ci"))
        // A secret that is not text, or not the type asked for, is an error, not nil.
        try keychain.set(Data([0xFF]), for: key)
        #expect(throws: KeychainError.self) { try keychain[string: key] }
        #expect(throws: KeychainError.self) { try keychain[key, as: Credentials.self] }
    }

    /// The async example of docs/library.md, as written there.
    @Test func theReadmeExampleRuns() async throws {
        struct Credentials: Codable, Sendable { var user: String }
        func deploy(keychain: Keychain) async throws -> String? {
            let deployKey = try KeychainKey("deploy-key")
            let tokenKey = try KeychainKey("github-token")
            guard try await keychain.exists(deployKey) else { return nil }  // reads no secret
            async let token = keychain.string(for: tokenKey)  // both reads at once
            async let creds = keychain.value(Credentials.self, for: try KeychainKey("creds"))
            return try await "\(token ?? "") \(creds?.user ?? "")"
        }
        let keychain = Keychain(service: try ServiceName("readme"), store: InMemorySecretStore())
        #expect(try await deploy(keychain: keychain) == nil)
        try await keychain.set(Data([1]), for: KeychainKey("deploy-key"))
        try await keychain.set("ghp_x", for: KeychainKey("github-token"))
        try await keychain.set(value: Credentials(user: "ci"), for: KeychainKey("creds"))
        #expect(try await deploy(keychain: keychain) == "ghp_x ci")
        let cached = try keychain[string: KeychainKey("github-token")]  // subscripts throw too
        #expect(cached == "ghp_x")
    }
}
