import FoundationEssentials
import KeychainStore
import KeychainSystem

// The async API: each operation of ``Keychain`` as an `async` function. The backends block (on
// D-Bus, a file lock, scrypt, HTTP), so the work runs on a thread of its own, never on one of
// Swift concurrency's cooperative threads, which are as many as the CPU has cores: a task that
// awaits a slow keyring leaves them free for every other task. Each call is bounded by the
// backend's timeout; cancelling the task does not stop a call already running.
extension Keychain {
    /// See ``data(for:)``.
    public func data(for key: KeychainKey) async throws -> Data? {
        try await offCooperativePool { try self.data(for: key) }
    }

    /// See ``string(for:)``.
    public func string(for key: KeychainKey) async throws -> String? {
        try await offCooperativePool { try self.string(for: key) }
    }

    /// See ``value(_:for:)``.
    public func value<T: Decodable & Sendable>(_ type: T.Type, for key: KeychainKey) async throws -> T? {
        try await offCooperativePool { try self.value(type, for: key) }
    }

    /// See ``exists(_:)``.
    public func exists(_ key: KeychainKey) async throws -> Bool {
        try await offCooperativePool { try self.exists(key) }
    }

    /// See ``set(_:for:)-(Data,_)``.
    public func set(_ secret: Data, for key: KeychainKey) async throws {
        try await offCooperativePool { try self.set(secret, for: key) }
    }

    /// See ``set(_:for:)-(String,_)``.
    public func set(_ text: String, for key: KeychainKey) async throws {
        try await offCooperativePool { try self.set(text, for: key) }
    }

    /// See ``set(value:for:)``.
    public func set<T: Encodable & Sendable>(value: T, for key: KeychainKey) async throws {
        try await offCooperativePool { try self.set(value: value, for: key) }
    }

    /// See ``storeAll(_:progress:)``; `progress` is called on the worker thread.
    public func storeAll(_ secrets: [SecretToStore], progress: @escaping @Sendable (Int) -> Void = { _ in })
        async throws
    {
        try await offCooperativePool { try self.storeAll(secrets, progress: progress) }
    }

    /// See ``addAll(_:progress:)``; `progress` is called on the worker thread.
    public func addAll(_ secrets: [SecretToStore], progress: @escaping @Sendable (Int) -> Void = { _ in })
        async throws -> [Bool]
    {
        try await offCooperativePool { try self.addAll(secrets, progress: progress) }
    }

    /// See ``delete(_:)``.
    @discardableResult
    public func delete(_ key: KeychainKey) async throws -> Bool {
        try await offCooperativePool { try self.delete(key) }
    }

    /// See ``reset()``.
    @discardableResult
    public func reset() async throws -> Int {
        try await offCooperativePool { try self.reset() }
    }

    /// See ``items()``.
    public func items() async throws -> [ItemInfo] {
        try await offCooperativePool { try self.items() }
    }

    /// See ``itemsOfAllServices()``.
    public func itemsOfAllServices() async throws -> [ItemInfo] {
        try await offCooperativePool { try self.itemsOfAllServices() }
    }

    /// See ``listing(ofAllServices:)``.
    public func listing(ofAllServices: Bool = false) async throws -> ItemListing {
        try await offCooperativePool { try self.listing(ofAllServices: ofAllServices) }
    }
}

/// Runs `work` on a thread of its own (``startThread(_:)``, the library's one launcher), so that a
/// thread runs it even when every other one is blocked; the task awaits its end. (One shared
/// concurrent queue runs only a few blocked calls at once: KeychainAsyncTests fails.)
func offCooperativePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    let result: Result<T, any Error> = await withCheckedContinuation { continuation in
        if let failure = startThread({ continuation.resume(returning: Result { try work() }) }) {
            continuation.resume(
                returning: .failure(KeychainError.backendFailure(detail: "no thread could be started: \(failure)")))
        }
    }
    return try result.get()
}
