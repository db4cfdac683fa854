internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

/// How a ``SecretServiceStore`` reaches the Secret Service: our own connection where the bus is a
/// Unix socket (``direct``, SecretServiceDirect.swift), else GIO's shared connection, the
/// encrypted session kept on each (``SecretSession``), and libsecret's service proxy only for what libsecret must do
/// (unlocking and prompts, creating the default collection, writes it falls back to). The
/// operations on either connection are SecretServiceClient's; watches use GDBus.
final class SecretServiceConnection: Sendable {
    /// An encrypted session and the bus connection it was opened on.
    struct KeptSession: Sendable {
        let bus: OwnedObject
        let session: SecretSession
    }
    /// The session of the last read, for the next one.
    let kept = Locked<KeptSession?>(nil)
    /// Our half of a key exchange computed ahead (see ``onBus(_:seconds:preparingSession:_:)``),
    /// for the next session opened; used once.
    let preparedExchange = Locked<SecretSession.KeyExchange?>(nil)
    /// Our own connection (SecretServiceDirect.swift), opened on first use.
    let direct = Locked<DirectBus?>(nil)
    /// libsecret's schema of our items (`org.freedesktop.Secret.Generic`, not matched by name).
    var schema: UnsafePointer<SecretSchema> { keychain_cli_schema() }

    /// The bus name of the Secret Service: `$SECRET_SERVICE_BUS_NAME` or the well-known name, as
    /// libsecret chooses it; read once per process, as libsecret's shared service proxy did, not
    /// once per D-Bus call (a list of 1,000 items makes 1,001).
    static let busName: String =
        Environment.value("SECRET_SERVICE_BUS_NAME") ?? "org.freedesktop.secrets"

    /// Runs `body` as a bounded operation (``BoundedOperation/run(_:seconds:_:)``) on GIO's
    /// shared session bus connection (``sharedSessionBus(_:meanwhile:)``): the Secret Service
    /// client's way when our own connection cannot be taken (SecretServiceDirect.swift), and the
    /// watcher's. `preparingSession`: the caller will most likely read or write a secret, so while
    /// GIO connects this computes our half of the session's key exchange (a large share of a
    /// whole `get`'s work), unless a session is kept or a prepared half is already waiting.
    func onBus<T>(
        _ what: String, seconds: Double, preparingSession: Bool = false,
        _ body: (BoundedOperation, OpaquePointer) throws -> T
    ) throws(KeychainError) -> T {
        try BoundedOperation.run(what, seconds: seconds) { operation in
            let prepare = {
                guard preparingSession, self.kept.withLock({ $0 == nil }) else { return }
                self.preparedExchange.withLock { $0 = $0 ?? SecretSession.KeyExchange() }
            }
            return try sharedSessionBus(operation, meanwhile: prepare).use { try body(operation, $0) }
        }
    }

    /// GIO's shared session bus connection (connected on its own thread, `meanwhile` running
    /// here), the one libsecret uses: a message bus connection to GDBus, which sends the bus the
    /// `AddMatch` rules that signal subscriptions need.
    func sharedSessionBus(_ operation: BoundedOperation, meanwhile: () -> Void = {}) throws -> OwnedObject {
        // g_bus_get / g_bus_get_finish
        try operation.call(
            { g_bus_get(G_BUS_TYPE_SESSION, $0, $1, $2) }, meanwhile: meanwhile,
            finish: {
                g_bus_get_finish($0, $1).map {
                    // GIO's shared connection raises SIGTERM in the process when the bus hangs up;
                    // a closed bus is an error of the call instead (69, one line).
                    g_dbus_connection_set_exit_on_close($0, 0)
                    return OwnedObject(taking: UnsafeMutableRawPointer($0))
                }
            })!
    }

    /// The shared SecretService proxy; `openSession` negotiates the encrypted session that
    /// transferring secrets needs (a Diffie-Hellman exchange that metadata does not need).
    func connect(_ operation: BoundedOperation, openSession: Bool) throws -> OwnedObject {
        let flags = openSession ? SECRET_SERVICE_OPEN_SESSION : SECRET_SERVICE_NONE
        // secret_service_get / secret_service_get_finish
        return try operation.call(
            { secret_service_get(flags, $0, $1, $2) },
            finish: { secret_service_get_finish($0, $1).map { OwnedObject(taking: $0) } })!
    }

    /// Calls `body` with every item of every collection whose attributes include `pairs`, after
    /// asking the Secret Service to unlock the locked ones (which may prompt, within the deadline).
    func search<T>(
        _ operation: BoundedOperation, _ service: OwnedObject,
        _ pairs: some Sequence<(key: String, value: String)>, schema: UnsafePointer<SecretSchema>? = nil,
        _ body: ([UnsafeMutablePointer<SecretItem>]) throws -> T
    ) throws -> T {
        let schema = schema ?? self.schema
        let attributes = OwnedAttributes(pairs)
        let connection = service.pointer(to: SecretService.self)
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue | SECRET_SEARCH_UNLOCK.rawValue)
        // secret_service_search / secret_service_search_finish. libsecret loads every item it
        // finds, and fails the whole search when one was deleted by another client in between:
        // search again (a few times: each retry means another client is deleting items right now).
        var items: [OwnedObject] = []
        for attempt in 1...5 {
            var vanished = false
            items = try operation.call(
                { cancellable, callback, data in
                    attributes.use { secret_service_search(connection, schema, $0, flags, cancellable, callback, data) }
                },
                finish: { result, error in
                    let list = secret_service_search_finish(connection, result, error)
                    vanished = attempt < 5 && clearingVanishedItemError(error)
                    return takeObjects(list)
                })
            if !vanished { break }
        }
        return try withExtendedLifetime(items) { try body(items.map { $0.pointer(to: SecretItem.self) }) }
    }
}
