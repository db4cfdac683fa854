package import CLibSecret

/// One bounded backend operation: a private GMainContext on which libsecret's and GDBus's
/// asynchronous calls run, and a limit on how long the backend may go without answering.
///
/// libsecret's `…_sync` functions spin their own hidden main loop, which no timer of ours can
/// reach; driving the asynchronous forms here lets a timeout source cancel the shared
/// `GCancellable`, so an unanswered unlock prompt ends in ``DBusError/timedOut(operation:seconds:)``
/// (in the caller's words) instead of a hang. The limit restarts whenever a call completes, so a long operation that keeps
/// progressing (gnome-keyring deletes the items of a large keyring one slow step at a time) is not cut short, while a
/// backend or prompt that stops answering is. It holds even for a call that never calls back
/// (libsecret's precondition failures return without one). Not thread-safe: one instance lives
/// on one thread, whose thread-default main context it is while it runs.
package final class BoundedOperation {
    /// Where one call's callback leaves its result. Retained by the call's user data and released
    /// by the callback, so a callback arriving after we gave up never touches freed memory.
    fileprivate final class Completion {
        var object: OwnedObject?
        var result: OpaquePointer? { object?.opaque }
    }

    /// The callback of every call: keeps the result in the call's ``Completion``.
    private static let complete: GAsyncReadyCallback = { _, result, data in
        let completion = Unmanaged<Completion>.fromOpaque(data!).takeRetainedValue()
        completion.object = OwnedObject(adding: UnsafeMutableRawPointer(result!))
    }

    /// A call started by ``begin(_:)``, to be finished by ``end(_:finish:)``.
    package struct PendingCall {
        fileprivate let completion: Completion
    }

    private let context: OpaquePointer
    private let cancellable: OwnedObject
    /// What a failure means to the caller: every error a call throws is the caller's own.
    private let meaning: (DBusError) -> any Error
    private var timer: UnsafeMutablePointer<GSource>?
    /// What it is for, and how long the backend may go without answering.
    package let what: String
    package let seconds: Double
    private var expired = false

    /// Runs `body` with a new operation that is cancelled when the backend has not answered for
    /// `seconds`.
    /// `what` completes "timed out waiting for … to …".
    /// Every failure is a `Failure`: `meaning` says what a ``DBusError`` (a GError, the deadline,
    /// anything else `body` throws) stands for to the caller.
    package static func run<T, Failure: Error>(
        _ what: String, seconds: Double, meaning: @escaping (DBusError) -> Failure,
        _ body: (BoundedOperation) throws -> T
    ) throws(Failure) -> T {
        let operation = BoundedOperation(what: what, seconds: seconds, meaning: meaning)
        defer { operation.close() }
        do {
            return try body(operation)
        } catch let error as Failure {
            throw error
        } catch let error as DBusError {
            throw meaning(error)
        } catch {
            throw meaning(.failed("\(error)"))
        }
    }

    private init(what: String, seconds: Double, meaning: @escaping (DBusError) -> any Error) {
        self.what = what
        self.seconds = seconds
        self.meaning = meaning
        context = g_main_context_new()
        cancellable = OwnedObject(taking: g_cancellable_new())
        g_main_context_push_thread_default(context)
        timer = newTimer()
    }

    /// A timeout source on this operation's context that cancels it after `seconds`.
    private func newTimer() -> UnsafeMutablePointer<GSource> {
        let milliseconds = max(1, min(Double(UInt32.max), (seconds * 1000).rounded(.up)))
        let timer = g_timeout_source_new(UInt32(milliseconds))!
        g_source_set_callback(
            timer,
            { data in
                let operation = Unmanaged<BoundedOperation>.fromOpaque(data!).takeUnretainedValue()
                operation.expired = true
                g_cancellable_cancel(operation.cancellable.pointer(to: GCancellable.self))
                return 0  // G_SOURCE_REMOVE
            }, Unmanaged.passUnretained(self).toOpaque(), nil)
        g_source_attach(timer, context)
        return timer
    }

    /// The backend answered: it gets `seconds` again from now.
    private func restartTimer() {
        guard !expired else { return }
        removeTimer()
        timer = newTimer()
    }

    private func removeTimer() {
        guard let timer else { return }
        g_source_destroy(timer)
        g_source_unref(timer)
        self.timer = nil
    }

    private func close() {
        removeTimer()
        g_main_context_pop_thread_default(context)
        g_main_context_unref(context)
    }

    /// How long work outside GLib (a socket of our own) may wait for the backend, and the error
    /// to throw (the caller's) when it has waited that long.
    package var limit: (seconds: Double, timedOut: any Error) {
        (seconds, meaning(.timedOut(operation: what, seconds: seconds)))
    }

    /// Starts one asynchronous call and iterates the context until it completes.
    ///
    /// - Parameters:
    ///   - start: calls the asynchronous C function with the cancellable, callback and user data.
    ///   - meanwhile: work to do while the call is under way.
    ///   - finish: calls the matching `…_finish` function with the result and an error slot.
    /// - Throws: what the GError (or the deadline) means to the caller.
    package func call<T>(
        _ start: (UnsafeMutablePointer<GCancellable>, GAsyncReadyCallback, gpointer) -> Void,
        meanwhile: () -> Void = {},
        finish: (OpaquePointer, GErrorSlot) -> T
    ) throws -> T {
        let pending = begin(start)
        meanwhile()
        return try end(pending, finish: finish)
    }

    /// One D-Bus method call on `bus`, for the Secret Service and bus calls libsecret does not
    /// offer.
    package func callMethod(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ parameters: OwnedVariant?, replyType: OpaquePointer? = nil, meanwhile: () -> Void = {}
    ) throws -> OwnedVariant {
        let reply = try callMethod(
            bus, destination, path, interface, method, parameters, replyType: replyType, meanwhile: meanwhile,
            finish: { g_dbus_connection_call_finish(bus, $0, $1) })
        return OwnedVariant(taking: reply!)
    }

    /// One D-Bus method call on `bus`, its reply made by `finish` (which calls
    /// `g_dbus_connection_call_finish` and may decide what an error means).
    package func callMethod<T>(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ parameters: OwnedVariant?, replyType: OpaquePointer? = nil, meanwhile: () -> Void = {},
        finish: (OpaquePointer, GErrorSlot) -> T
    ) throws -> T {
        try call(
            {
                g_dbus_connection_call(
                    bus, destination, path, interface, method, parameters?.raw, replyType, G_DBUS_CALL_FLAGS_NONE,
                    -1, $0, $1, $2)
            },
            meanwhile: meanwhile, finish: finish)
    }

    /// Starts one asynchronous call and returns without waiting: the caller does other work (or
    /// starts other calls, which the peer answers in order), then waits in ``end(_:finish:)``.
    package func begin(_ start: (UnsafeMutablePointer<GCancellable>, GAsyncReadyCallback, gpointer) -> Void)
        -> PendingCall
    {
        let completion = Completion()
        start(cancellable.pointer(to: GCancellable.self), Self.complete, Unmanaged.passRetained(completion).toOpaque())
        return PendingCall(completion: completion)
    }

    /// Waits for a call ``begin(_:)`` started and returns its finished value, as ``call(_:meanwhile:finish:)`` does.
    package func end<T>(
        _ call: PendingCall, finish: (OpaquePointer, GErrorSlot) -> T
    ) throws -> T {
        try wait(for: [call.completion])
        return try finished(call.completion, finish)
    }

    /// The value `finish` makes of a completed call, or the error it reports.
    private func finished<T>(
        _ completion: Completion, _ finish: (OpaquePointer, GErrorSlot) -> T
    ) throws -> T {
        let (value, error) = catchingError { finish(completion.result!, $0) }
        if let error { throw meaning(.glib(error, expired: expired, operation: what, seconds: seconds)) }
        return value
    }

    private func wait(for completions: [Completion]) throws {
        func completed() -> Int { completions.count { $0.result != nil } }
        func done() -> Bool { completed() == completions.count }
        var answered = completed()
        while !done() && !expired {
            g_main_context_iteration(context, 1)
            let now = completed()
            if now > answered {
                answered = now
                restartTimer()
            }
        }
        // Cancelled calls complete on the next iterations; a call that ignores cancellation or
        // never calls back must not hold the command past its deadline.
        let grace = g_get_monotonic_time() + 250_000
        while !done() && g_get_monotonic_time() < grace {
            if g_main_context_iteration(context, 0) == 0 { g_usleep(1000) }
        }
        if !done() {
            throw meaning(.timedOut(operation: what, seconds: seconds))
        }
    }
}
