import Glibc

/// Runs `body` on a new detached thread: the one way the library starts a thread of its own
/// (a store's watcher, the holder's workers and its sleep watch). Nil when it started, else why
/// it could not (the system's words for pthread_create's error).
package func startThread(_ body: @escaping @Sendable () -> Void) -> String? {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let created = pthread_create(
        &thread, nil,
        { argument in
            Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
            return nil
        }, box)
    guard created == 0 else {
        Unmanaged<Box>.fromOpaque(box).release()
        return String(cString: strerror(created))
    }
    pthread_detach(thread)
    return nil
}
