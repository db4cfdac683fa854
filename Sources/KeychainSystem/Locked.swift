import Glibc

/// A value behind a pthread mutex: the lock KeychainCore's shared state uses.
///
/// It does what `Synchronization.Mutex` does, and exists because ThreadSanitizer on Linux (Swift
/// 6.x) reports a false "Swift access race" inside every `Mutex.withLock`, which would bury real
/// races in the library's `swift test --sanitize=thread` run; a pthread mutex is understood by
/// the sanitizer. Not reentrant: `body` must not take the same lock again.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    package func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
