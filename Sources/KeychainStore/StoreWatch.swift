import Dispatch
import Glibc
import KeychainSystem

/// A running watcher (see ``SecretStore/watch(service:interval:report:)``): a thread of its own
/// that reports changes until ``cancel()`` is called or it reports a failure.
public final class StoreWatch: Sendable {
    private struct State {
        var cancelled = false
        var thread: pthread_t?
        /// What the body told ``start(_:)``: nil until it is ready, then the failure or none.
        var started: KeychainError??
    }

    private let state = Locked(State())
    private let sleeper = DispatchSemaphore(value: 0)
    private let startup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let wakeup = Wakeup()

    private init() {}

    /// A descriptor that becomes readable once ``cancel()`` is called: a watcher that waits on
    /// descriptors polls it too, and so sees the cancellation without a tick (-1: none).
    package var cancelDescriptor: Int32 { wakeup.descriptor }

    /// Whether ``cancel()`` was called: the watcher's loop checks it between steps.
    package var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Stops the watcher. No report follows its return, except when it is called from a report
    /// (on the watcher's own thread), which then is the last.
    public func cancel() {
        cancel(waitingAtMost: .infinity)
    }

    /// Stops the watcher, waiting at most `seconds` for its thread to end: a report may be stuck
    /// (writing to a pipe nobody reads), and a program that is told to end must end all the same.
    /// - Returns: whether the thread ended (no report follows), as for ``cancel()``.
    @discardableResult
    public func cancel(waitingAtMost seconds: Double) -> Bool {
        let thread = state.withLock { state in
            defer { state.cancelled = true }
            return state.cancelled ? nil : state.thread
        }
        sleeper.signal()
        wakeup.signal()
        guard let thread, pthread_equal(thread, pthread_self()) == 0 else { return true }
        if seconds.isFinite {
            guard finished.wait(timeout: .now() + seconds) == .success else { return false }
        } else {
            finished.wait()
        }
        finished.signal()  // a later cancel() returns at once
        return true
    }

    /// Waits `seconds`, or less when the watch is cancelled.
    package func sleep(_ seconds: Double) {
        _ = sleeper.wait(timeout: .now() + max(0, seconds))
    }

    /// Runs `body` on a new thread and returns when it called `ready`: with nil it runs on until
    /// it returns (after ``isCancelled``, or after reporting a failure); with an error, that error
    /// is thrown here once the thread has ended.
    package static func start(
        _ body: @escaping @Sendable (StoreWatch, _ ready: (KeychainError?) -> Void) -> Void
    ) throws(KeychainError) -> StoreWatch {
        let watch = StoreWatch()
        let failure = startThread {
            // The signals that end a program are the main thread's to handle (`watch` waits for
            // them there), never a watcher's, whose default action would end the process.
            var signals = sigset_t()
            sigemptyset(&signals)
            for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2] { sigaddset(&signals, signal) }
            pthread_sigmask(SIG_BLOCK, &signals, nil)
            watch.state.withLock { $0.thread = pthread_self() }
            body(watch) { failure in
                watch.state.withLock { $0.started = .some(failure) }
                watch.startup.signal()
            }
            if watch.state.withLock({ $0.started == nil }) {
                watch.state.withLock {
                    $0.started = .some(.backendFailure(detail: "the watcher ended before it started"))
                }
                watch.startup.signal()
            }
            watch.finished.signal()
        }
        if let failure {
            throw .backendFailure(detail: "cannot start a watcher thread (\(failure))")
        }
        watch.startup.wait()
        if case .some(.some(let failure)) = watch.state.withLock({ $0.started }) {
            watch.finished.wait()
            throw failure
        }
        return watch
    }

    /// A watcher that takes a snapshot of the items, waits (`interval` seconds, or as `wait`
    /// decides), takes another and reports the differences, until cancelled. The first snapshot
    /// is taken before this returns, so that every change after it is reported; a failing
    /// snapshot is thrown then, or reported later, and ends the watch.
    package static func polling(
        interval: Double, report: @escaping @Sendable (WatchEvent) -> Void,
        wait: (@Sendable (StoreWatch, Double) -> Void)? = nil, whenDone: (@Sendable () -> Void)? = nil,
        snapshot: @escaping @Sendable () throws(KeychainError) -> [ItemID: ItemState]
    ) throws(KeychainError) -> StoreWatch {
        try start { watch, ready in
            defer { whenDone?() }
            var last: [ItemID: ItemState]
            do throws(KeychainError) {
                last = try snapshot()
            } catch {
                return ready(error)
            }
            ready(nil)
            while !watch.isCancelled {
                if let wait { wait(watch, interval) } else { watch.sleep(interval) }
                if watch.isCancelled { return }
                do throws(KeychainError) {
                    let now = try snapshot()
                    for change in differences(from: last, to: now) where !watch.isCancelled {
                        report(.change(change))
                    }
                    last = now
                } catch {
                    if !watch.isCancelled { report(.failure(error)) }
                    return
                }
            }
        }
    }
}
