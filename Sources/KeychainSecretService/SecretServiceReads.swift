internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

// How SecretServiceStore reads a secret: in its own encrypted session (SecretSession), opened
// on the first read and kept, or through libsecret for a service without one; and how it asks
// the service to unlock locked items.
extension SecretServiceConnection {
    /// The secret of the item at `path`, read in this store's encrypted session: opened on the
    /// first read and kept for later ones on the same connection, as libsecret keeps its own.
    /// A service that offers no such session is read through libsecret, which falls back to
    /// what the service offers. Nil when the item no longer exists.
    func readSecret(at path: String, _ operation: BoundedOperation, _ bus: OpaquePointer) throws -> Data? {
        switch try inSession(operation, bus, { try getSecret(at: path, in: $0, operation, bus) }) {
        case .some(let secret): secret
        case .none: try readSecretThroughLibsecret(at: path, operation)
        }
    }

    /// Runs `body` in the session kept for `bus`, or, when there is none or the service no longer
    /// knows it (a restarted service), once more in a new one, kept for later; nil when the
    /// service offers no encrypted session. A step that ran out of time is not tried again.
    ///
    /// A new session whose key the service may have derived otherwise
    /// (``SecretSession/keyNotAgreed``, once in 256) is replaced by another before `body` sends a
    /// secret in it; a read whose answer came in it is asked again in the next.
    func inSession<T>(
        _ operation: BoundedOperation, _ bus: OpaquePointer, _ body: (SecretSession) throws -> T
    ) throws -> T? {
        if let session = kept.withLock({ $0?.bus.opaque == bus ? $0?.session : nil }) {
            do {
                return try body(session)
            } catch {
                if case KeychainError.timedOut = error { throw error }
            }
        }
        // Four sessions in a row without agreement: a 2^-32 chance, or a service that pads oddly.
        for attempt in 1...4 {
            guard let session = try openSession(operation, bus) else { return nil }
            let kept = KeptSession(bus: OwnedObject(adding: UnsafeMutableRawPointer(bus)), session: session)
            self.kept.withLock { $0 = kept }
            do {
                return try body(session)
            } catch let error as KeychainError where error == SecretSession.keyNotAgreed && attempt < 4 {
                continue
            }
        }
        preconditionFailure("the last attempt returns or throws")
    }

    /// Negotiates an encrypted session with the Secret Service (see ``SecretSession``); nil when
    /// the service does not offer one. Our half of the exchange is the one prepared while
    /// connecting, if any; the session's key is derived when first needed (``SecretSession/deriveKey()``
    /// runs while the first request in the session is under way).
    func openSession(_ operation: BoundedOperation, _ bus: OpaquePointer, meanwhile: () -> Void = {}) throws
        -> SecretSession?
    {
        let exchange = preparedExchange.withLock { $0.take() } ?? SecretSession.KeyExchange()
        let calls = GDBusCalls(operation, bus)
        let call = try Self.sendOpenSession(exchange, on: calls)
        meanwhile()
        return try Self.openedSession(call, exchange, on: calls)
    }

    /// The secret of the item at `path`, sent and decrypted in `session`; nil when the item is gone.
    func getSecret(
        at path: String, in session: SecretSession, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> Data? {
        let calls = GDBusCalls(operation, bus)
        let call = try Self.sendGetSecret(at: path, in: session, on: calls)
        session.deriveKey()
        return try Self.secret(call, at: path, in: session, on: calls)
    }

    /// The secret of the item at `path` through libsecret, for a service without an encrypted session.
    func readSecretThroughLibsecret(at path: String, _ operation: BoundedOperation) throws -> Data? {
        try connect(operation, openSession: false).use(as: SecretService.self) { connection in
            // secret_service_get_secret_for_dbus_path / …_finish (opens the session if needed);
            // the path is a C copy that outlives the asynchronous call, not a Swift temporary.
            let cPath = strdup(path)!
            defer { free(cPath) }
            let value = try operation.call(
                { secret_service_get_secret_for_dbus_path(connection, cPath, $0, $1, $2) },
                finish: { secret_service_get_secret_for_dbus_path_finish(connection, $0, $1).map(takeSecretValue) })
            guard let value else {
                throw KeychainError.locked(detail: "the item was locked again before its secret was read")
            }
            return value
        }
    }

    /// Asks the Secret Service to unlock the locked items at `paths` (which may prompt, within the
    /// deadline) and returns the paths it unlocked: fewer than `paths` when there is no prompter
    /// or the prompt was dismissed.
    func unlock(_ paths: [String], _ operation: BoundedOperation) throws -> [String] {
        guard !paths.isEmpty else { return [] }
        return try connect(operation, openSession: false).use(as: SecretService.self) { connection in
            let copies = paths.map { strdup($0)! }
            defer {
                for copy in copies { free(copy) }
            }
            var vector: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) } + [nil]
            // secret_service_unlock_dbus_paths / …_finish
            return try operation.call(
                { secret_service_unlock_dbus_paths(connection, &vector, $0, $1, $2) },
                finish: { result, error in
                    var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                    _ = secret_service_unlock_dbus_paths_finish(connection, result, &unlocked, error)
                    return takeStrings(unlocked)
                })
        }
    }
}
