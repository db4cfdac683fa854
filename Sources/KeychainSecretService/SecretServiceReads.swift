internal import CLibSecret
import FoundationEssentials
import KeychainGLib
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
        if let session = kept.withLock({ $0?.bus == bus ? $0?.session : nil }) {
            do {
                return try body(session)
            } catch {
                if case KeychainError.timedOut = error { throw error }
            }
        }
        // Four sessions in a row without agreement: a 2^-32 chance, or a service that pads oddly.
        for attempt in 1...4 {
            guard let session = try openSession(operation, bus) else { return nil }
            kept.withLock { slot in
                if let old = slot { g_object_unref(UnsafeMutableRawPointer(old.bus)) }
                g_object_ref(UnsafeMutableRawPointer(bus))
                slot = KeptSession(bus: bus, session: session)
            }
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
        let prepared = preparedExchange.withLock { prepared in
            defer { prepared = nil }
            return prepared
        }
        let exchange = prepared ?? SecretSession.KeyExchange()
        let publicValue = byteArrayVariant(exchange.paddedPublicValue)
        let parameters = g_variant_new_tuple(
            [g_variant_new_string(SecretSession.algorithm), g_variant_new_variant(publicValue)], 2)
        // org.freedesktop.Secret.Service.OpenSession(s algorithm, v input) -> (v output, o result)
        let reply = try operation.call(
            {
                g_dbus_connection_call(
                    bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
                    parameters, keychain_cli_type_open_session_reply(), G_DBUS_CALL_FLAGS_NONE, -1, $0, $1, $2)
            },
            meanwhile: meanwhile,
            finish: { result, error in
                let reply = g_dbus_connection_call_finish(bus, result, error)
                // A service without this session: no reply and no error, so the caller falls back.
                if let failure = error.pointee, remoteErrorName(failure) == "org.freedesktop.DBus.Error.NotSupported" {
                    g_clear_error(error)
                }
                return reply
            })
        guard let reply else { return nil }
        defer { g_variant_unref(reply) }
        let output = propertyValue(reply)
        defer { g_variant_unref(output) }
        guard g_variant_is_of_type(output, keychain_cli_type_bytestring()) != 0 else {
            throw KeychainError.backendFailure(
                detail: "the Secret Service answered the session's key exchange with no public value")
        }
        // The key is derived while the first request in the session is under way.
        return SecretSession(path: variantString(reply, child: 1), exchange: exchange, peer: variantBytes(output))
    }

    /// The secret of the item at `path`, sent and decrypted in `session`; nil when the item is gone.
    func getSecret(
        at path: String, in session: SecretSession, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> Data? {
        // org.freedesktop.Secret.Item.GetSecret(o session) -> ((oayays) secret)
        guard
            let reply = try operation.callItemMethod(
                bus, Self.busName, path, "org.freedesktop.Secret.Item", "GetSecret",
                g_variant_new_tuple([g_variant_new_object_path(session.path)], 1),
                replyType: keychain_cli_type_get_secret_reply(), meanwhile: session.deriveKey)
        else { return nil }
        defer { g_variant_unref(reply) }
        let secret = g_variant_get_child_value(reply, 0)!
        defer { g_variant_unref(secret) }
        return try confirmingEmpty(session.open(secret), at: path, operation, bus)
    }

    /// `secret`, or nil when it is empty and the item at `path` is gone by now. kwalletd5
    /// removes an item's secret before the item itself (a deleted object goes once its event
    /// loop turns): a read that comes between gets an empty secret, where the item is in fact
    /// gone. One property read, asked only for an empty secret, tells them apart.
    func confirmingEmpty(_ secret: Data, at path: String, _ operation: BoundedOperation, _ bus: OpaquePointer)
        throws -> Data?
    {
        guard secret.isEmpty else { return secret }
        // org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value)
        let reply = try operation.callItemMethod(
            bus, Self.busName, path, "org.freedesktop.DBus.Properties", "Get",
            g_variant_new_tuple(
                [g_variant_new_string("org.freedesktop.Secret.Item"), g_variant_new_string("Label")], 2))
        guard let reply else { return nil }
        g_variant_unref(reply)
        return secret
    }

    /// The secret of the item at `path` through libsecret, for a service without an encrypted session.
    func readSecretThroughLibsecret(at path: String, _ operation: BoundedOperation) throws -> Data? {
        let connection = try connect(operation, openSession: false)
        defer { g_object_unref(connection) }
        // secret_service_get_secret_for_dbus_path / …_finish (opens the session if needed);
        // the path is a C copy that outlives the asynchronous call, not a Swift temporary.
        let cPath = strdup(path)!
        defer { free(cPath) }
        let value = try operation.call(
            { secret_service_get_secret_for_dbus_path(connection, cPath, $0, $1, $2) },
            finish: { secret_service_get_secret_for_dbus_path_finish(connection, $0, $1) })
        guard let value else {
            throw KeychainError.locked(detail: "the item was locked again before its secret was read")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length: gsize = 0
        guard let bytes = secret_value_get(value, &length) else { return Data() }
        return Data(bytes: bytes, count: Int(length))
    }

    /// Asks the Secret Service to unlock the locked items at `paths` (which may prompt, within the
    /// deadline) and returns the paths it unlocked: fewer than `paths` when there is no prompter
    /// or the prompt was dismissed.
    func unlock(_ paths: [String], _ operation: BoundedOperation) throws -> [String] {
        guard !paths.isEmpty else { return [] }
        let connection = try connect(operation, openSession: false)
        defer { g_object_unref(connection) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        defer { g_strfreev(unlocked) }
        let copies = paths.map { strdup($0)! }
        defer {
            for copy in copies { free(copy) }
        }
        var vector: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) } + [nil]
        // secret_service_unlock_dbus_paths / …_finish
        _ = try operation.call(
            { secret_service_unlock_dbus_paths(connection, &vector, $0, $1, $2) },
            finish: { secret_service_unlock_dbus_paths_finish(connection, $0, &unlocked, $1) })
        return strings(unlocked)
    }
}

extension SecretSession {
    /// The plaintext of a `(oayays)` secret struct the service sent (session, IV, ciphertext,
    /// content type), which must name this session.
    func open(_ secret: OpaquePointer) throws -> Data {
        guard variantString(secret, child: 0) == path else {
            throw KeychainError.backendFailure(detail: "the Secret Service sent the secret in another session")
        }
        return try decrypt(parameters: variantBytes(secret, child: 1), value: variantBytes(secret, child: 2))
    }
}
