import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

/// The encrypted session kept on one bus connection, and an OpenSession sent on it and not yet
/// answered, with our half of its key exchange.
final class SessionSlot<Call> {
    var session: SecretSession?
    var opening: (call: Call, exchange: SecretSession.KeyExchange)?

    init(_ session: SecretSession? = nil) { self.session = session }
}

/// The Secret Service's operations on one bus connection (``ServiceBus``), written once here on
/// the calls of SecretServiceCalls.swift. What only libsecret does (unlocking, which may prompt;
/// a service without an encrypted session) runs through ``withOperation(_:)``, bounded as the
/// client's calls are.
struct SecretServiceClient {
    let bus: ServiceBus
    /// Where this connection's session is kept: our own connection's, or one for this operation
    /// seeded with (and kept back in) the store's GDBus session.
    let slot: SessionSlot<ServiceBus.Call>
    /// The store's connection: the prepared key exchange, the kept sessions, libsecret's steps.
    let connection: SecretServiceConnection

    /// The client on our own connection.
    init(_ connection: SecretServiceConnection, _ direct: SecretServiceConnection.DirectBus) {
        (self.connection, bus, slot) = (connection, .wire(direct.wire), direct.slot)
    }

    /// The client on a GDBus connection, within `operation`; its session is the one the store
    /// keeps for that connection. `subscriptions`: where its signals are received, if it takes any.
    init(
        _ connection: SecretServiceConnection, _ operation: BoundedOperation, _ bus: OpaquePointer,
        subscriptions: GDBusSubscriptions? = nil
    ) {
        self.connection = connection
        self.bus = .gdbus(GDBusCalls(operation, bus, subscriptions: subscriptions))
        slot = SessionSlot(connection.kept.withLock { $0?.bus.opaque == bus ? $0?.session : nil })
    }

    /// The client on a wire connection of its own (a watcher's), with no session kept.
    init(_ connection: SecretServiceConnection, wire: BusWire) {
        (self.connection, bus, slot) = (connection, .wire(wire), SessionSlot())
    }

    /// Whether the connection broke (nothing more can be asked on it).
    var isClosed: Bool {
        guard case .wire(let wire) = bus else { return false }
        return wire.closed
    }

    /// Runs `body` (libsecret's calls) in this client's bounded operation, or for our own
    /// connection in one of its own with the same words and limit.
    func withOperation<T>(_ body: (BoundedOperation) throws -> T) throws -> T {
        switch bus {
        case .wire(let wire): try BoundedOperation.run(wire.operation, seconds: wire.seconds, body)
        case .gdbus(let calls): try body(calls.bounded)
        }
    }

    /// Keeps `session` (or forgets the kept one, for nil) for later clients on this connection:
    /// our own connection keeps it in its slot; a GDBus one in the store.
    func keep(_ session: SecretSession?) {
        guard case .gdbus(let calls) = bus else { return }
        let kept = session.map {
            SecretServiceConnection.KeptSession(
                bus: OwnedObject(adding: UnsafeMutableRawPointer(calls.bus)), session: $0)
        }
        connection.kept.withLock { $0 = kept }
    }
}

/// What a search found: the paths of unlocked items and of items in locked collections.
typealias FoundItems = (unlocked: [String], locked: [String])

extension SecretServiceClient {
    /// The items whose attributes include `pairs`. OpenSession goes right behind the search
    /// when `openingSession` and no session is kept or on its way, so that the service answers
    /// both in one round trip. The search goes first: gnome-keyring 42 sometimes aborts (a
    /// failed assertion on a client it does not know yet) when a new connection's first call is
    /// OpenSession (measured: 1 `set` in about 1,500 killed the daemon; secret-tool, whose first
    /// calls go elsewhere, none).
    func search(_ pairs: [(String, String)], openingSession: Bool) throws -> FoundItems {
        let search = try SecretServiceConnection.sendSearch(pairs, on: bus)
        if openingSession && slot.session == nil && slot.opening == nil { try sendOpenSession() }
        return try SecretServiceConnection.searchResult(search, pairs, on: bus)
    }

    /// Runs `body` in this connection's encrypted session (opened if need be); nil when the
    /// service offers none. A new session whose key the service may have derived otherwise
    /// (``SecretSession/keyNotAgreed``, once in 256) is replaced by another, up to four times
    /// (four in a row: a 2^-32 chance, or a service that pads oddly); a session kept from an
    /// earlier call that fails (a restarted service forgot it) by a new one, once. A step that
    /// ran out of time is not tried again.
    func inSession<T>(_ body: (SecretSession) throws -> T) throws -> T? {
        var retried = false
        var attempts = 0
        while true {
            let reused = slot.opening == nil && slot.session != nil
            guard let session = try session() else { return nil }
            do {
                return try body(session)
            } catch let error as KeychainError where error == SecretSession.keyNotAgreed && attempts < 4 {
                attempts += 1
            } catch  where reused && !retried && !isClosed && !Self.isTimeOut(error) {
                retried = true
            }
            slot.session = nil
            keep(nil)
        }
    }

    /// The secret of the item at `path`, in this connection's session, or through libsecret for a
    /// service without one; nil when the item is gone (deleted after it was found).
    func readSecret(at path: String) throws -> Data? {
        switch try inSession({ try secret(at: path, in: $0) }) {
        case .some(let secret): return secret
        case .none: return try withOperation { try connection.readSecretThroughLibsecret(at: path, $0) }
        }
    }

    /// The secret of the item at `path` in `session` (its key derived while the request is on
    /// its way); nil when the item is gone.
    func secret(at path: String, in session: SecretSession) throws -> Data? {
        let call = try SecretServiceConnection.sendGetSecret(at: path, in: session, on: bus)
        session.deriveKey()
        return try SecretServiceConnection.secret(call, at: path, in: session, on: bus)
    }

    /// The secret of the first item whose attributes include `pairs` that can be read: an
    /// unlocked one, else one of those in locked collections after asking the service to unlock
    /// them (which may prompt). Nil when there is none; an error when the default collection is
    /// locked and hides its items, or the locked ones stay locked.
    func lookup(_ pairs: [(String, String)]) throws -> Data? {
        let found = try searchVisiblePaths(pairs, openingSession: true)
        // An item another client deletes after the search is not there: the next one, or a miss.
        for path in found.unlocked {
            if let secret = try readSecret(at: path) { return secret }
        }
        if found.locked.isEmpty { return nil }
        let unlocked = try unlock(found.locked)
        guard !unlocked.isEmpty else {
            throw KeychainError.locked(detail: "the item is in a locked keyring that could not be unlocked")
        }
        for path in unlocked {
            if let secret = try readSecret(at: path) { return secret }
        }
        return nil
    }

    /// Stores `secret` in every item whose attributes include `pairs` (another tool's item under
    /// the same service and key, with other attributes, gets the new secret in place, so every
    /// tool sees one value; an item deleted since the search is skipped), or, when there is none,
    /// in a new item of the default collection with `attributes` and `label` (``create(_:attributes:label:contentType:)``).
    /// Locked items are unlocked first (which may prompt). False when libsecret must do it: the
    /// service offers no encrypted session, or there is no default collection.
    func store(
        _ secret: Data, replacing pairs: [(String, String)], attributes: [(String, String)], label: String,
        contentType: String
    ) throws -> Bool {
        var found = try search(pairs, openingSession: true)
        found.unlocked += try unlockAll(found.locked, what: "the item is")
        let stored = try inSession { session -> Bool in
            var updated = false
            for path in found.unlocked
            where try SecretServiceConnection.putSecret(secret, at: path, in: session, on: bus) {
                updated = true
            }
            if updated { return true }
            return try create(
                secret, attributes: attributes, label: label, contentType: contentType, in: session)
        }
        return stored ?? false
    }

    /// Stores `secret` as a new item of the default collection (replacing one with the same
    /// `attributes`), as libsecret's `secret_password_storev` does but in this connection's
    /// session; false when libsecret must do it (see ``store(_:replacing:attributes:label:contentType:)``).
    func create(_ secret: Data, attributes: [(String, String)], label: String, contentType: String) throws -> Bool {
        let stored = try inSession { session in
            try create(secret, attributes: attributes, label: label, contentType: contentType, in: session)
        }
        return stored ?? false
    }

    /// `CreateItem` in the default collection; a locked one is unlocked first (which may prompt)
    /// and asked again, and a prompt the service asks for is performed. False when there is no
    /// default collection (libsecret creates one).
    private func create(
        _ secret: Data, attributes: [(String, String)], label: String, contentType: String, in session: SecretSession
    ) throws -> Bool {
        var unlocked = false
        while true {
            switch try SecretServiceConnection.createItem(
                secret, attributes: attributes, label: label, contentType: contentType, in: session, on: bus)
            {
            case .created: return true
            case .noCollection: return false
            case .prompt(let prompt):
                try withOperation { try connection.performPrompts([prompt], $0) }
                return true
            case .locked:
                guard !unlocked, let collection = try SecretServiceConnection.collection(aliased: "default", on: bus)
                else {
                    throw KeychainError.locked(detail: "the default keyring is locked and could not be unlocked")
                }
                guard try !unlock([collection]).isEmpty else {
                    throw KeychainError.locked(detail: "the default keyring is locked and could not be unlocked")
                }
                unlocked = true
            }
        }
    }

    /// Sends OpenSession with our half of the key exchange (the one prepared, if any).
    private func sendOpenSession() throws {
        let exchange = connection.preparedExchange.withLock { $0.take() } ?? SecretSession.KeyExchange()
        slot.opening = (try SecretServiceConnection.sendOpenSession(exchange, on: bus), exchange)
    }

    /// The connection's encrypted session, its OpenSession answered (sent now if need be); nil
    /// when the service offers none.
    private func session() throws -> SecretSession? {
        if let session = slot.session { return session }
        if slot.opening == nil { try sendOpenSession() }
        let (call, exchange) = slot.opening!
        slot.opening = nil
        slot.session = try SecretServiceConnection.openedSession(call, exchange, on: bus)
        keep(slot.session)
        return slot.session
    }

    private static func isTimeOut(_ error: any Error) -> Bool {
        switch error {
        case KeychainError.timedOut, DBusError.timedOut: true
        default: false
        }
    }
}
