import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

// `get` and `set` on the Secret Service when the session bus is a Unix socket: D-Bus spoken
// directly on our own connection (BusWire), so that they load no GLib, GIO or libsecret and start
// no GDBus worker thread. The authentication, Hello, SearchItems and OpenSession go out in one
// round trip (the session is kept for later calls), then GetSecret, or SetSecret or CreateItem.
// What this way does not do, it leaves to the GLib way, which then does the whole call: items
// only in locked keyrings (unlocking may prompt, which libsecret drives), no default collection,
// a service with no encrypted session, a bus that is not a Unix socket or refuses us. The read
// is in SecretServiceDirectRead.swift, the write in SecretServiceDirectWrite.swift.

extension SecretServiceConnection {
    /// The direct connection kept for one bus address, and its encrypted session.
    final class DirectBus {
        let address: String
        let wire: BusWire
        var session: SecretSession?
        /// An OpenSession sent and not yet answered, with our half of its key exchange.
        var opening: (serial: UInt32, exchange: SecretSession.KeyExchange)?

        init(address: String, wire: BusWire) { (self.address, self.wire) = (address, wire) }
    }

    /// Runs `body` on the direct connection for the current bus address (opened on first use;
    /// `what` and `seconds` are its errors' words and its limit per message). Nil when this way
    /// cannot be taken, or `body` says so: the caller takes the GLib way.
    func onDirectBus<T: Sendable>(what: String, seconds: Double, _ body: (DirectBus) throws -> T?)
        throws(KeychainError) -> T?
    {
        guard let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") else { return nil }
        return try direct.withLock { (kept: inout DirectBus?) throws(KeychainError) -> T? in
            if let bus = kept, bus.address != address || bus.wire.closed { kept = nil }
            if kept == nil {
                guard let endpoint = SessionBusSocket.Endpoint(address),
                    let wire = BusWire(endpoint, operation: what, seconds: seconds)
                else { return nil }
                kept = DirectBus(address: address, wire: wire)
            }
            do {
                return try body(kept!)
            } catch let error as KeychainError {
                throw error
            } catch DBusError.refused {
                return nil
            } catch let error as DBusError {
                throw KeychainError(error)
            } catch {
                throw .backendFailure(detail: "the Secret Service failed: \(error)")
            }
        }
    }

    /// Sends the search for items with `pairs` and, unless one is kept or on its way, OpenSession
    /// right behind it: the service answers both in one round trip. The search goes first:
    /// gnome-keyring 42 sometimes aborts (a failed assertion on a client it does not know yet)
    /// when a new connection's first call is OpenSession (see SecretServiceWrites.swift).
    /// Returns the search's serial, for ``searchResult(_:_:on:)``.
    func sendSearch(_ pairs: KeyValuePairs<String, String>, on bus: DirectBus) throws -> UInt32 {
        let search = try Self.sendSearch(pairs.map { ($0.key, $0.value) }, on: bus.wire)
        if bus.session == nil && bus.opening == nil { try openSession(on: bus) }
        return search
    }

    /// Runs `body` in the bus's encrypted session (opened if need be); nil when the service offers
    /// none. A new session whose key the service may have derived otherwise
    /// (``SecretSession/keyNotAgreed``, once in 256) is replaced by another, and a session kept
    /// from an earlier call that the service answers with an error (it restarted) by a new one,
    /// once.
    func inDirectSession<T>(_ bus: DirectBus, _ body: (SecretSession) throws -> T)
        throws -> T?
    {
        var retried = false
        for attempt in 1...5 {
            let reused = bus.opening == nil && bus.session != nil
            guard let session = try session(of: bus) else { return nil }
            do {
                return try body(session)
            } catch let error as KeychainError where error == SecretSession.keyNotAgreed && attempt < 5 {
                bus.session = nil
            } catch  where reused && !retried && !bus.wire.closed && !Self.isTimeOut(error) {
                (bus.session, retried) = (nil, true)
            }
        }
        preconditionFailure("the last attempt returns or throws")
    }

    private static func isTimeOut(_ error: any Error) -> Bool {
        switch error {
        case KeychainError.timedOut, DBusError.timedOut: true
        default: false
        }
    }

    /// Sends OpenSession with our half of the key exchange (the one prepared, if any).
    private func openSession(on bus: DirectBus) throws {
        let exchange = preparedExchange.withLock { $0.take() } ?? SecretSession.KeyExchange()
        bus.opening = (try Self.sendOpenSession(exchange, on: bus.wire), exchange)
    }

    /// The bus's encrypted session, its OpenSession answered (sent now if need be); nil when the
    /// service offers none.
    private func session(of bus: DirectBus) throws -> SecretSession? {
        if let session = bus.session { return session }
        if bus.opening == nil { try openSession(on: bus) }
        let (serial, exchange) = bus.opening!
        bus.opening = nil
        bus.session = try Self.openedSession(serial, exchange, on: bus.wire)
        return bus.session
    }

    /// The body of a reply of signature `signature`, or nil for an error saying that the object
    /// does not exist (an item another client deleted, or no default collection).
    func answerUnlessVanished(_ reply: BusMessage.Received, _ signature: String, _ wire: BusWire)
        throws -> BusReader?
    {
        if let name = reply.errorName, vanishedObjectErrors.contains(name) { return nil }
        return try answer(reply, signature, wire)
    }

    /// The body of a reply of signature `signature`; an error answered is thrown as its case.
    func answer(_ reply: BusMessage.Received, _ signature: String, _ wire: BusWire) throws
        -> BusReader
    {
        if let name = reply.errorName {
            var body = reply.body
            let detail = reply.signature.hasPrefix("s") ? (try? body.string()) ?? name : name
            throw KeychainError(remote: name, detail: detail, operation: wire.operation, seconds: wire.seconds)
        }
        guard reply.kind == .methodReturn, reply.signature == signature else {
            let answered = reply.signature.isEmpty ? "nothing" : reply.signature
            throw KeychainError.backendFailure(detail: "the Secret Service answered with \(answered), not \(signature)")
        }
        return reply.body
    }
}

extension SecretSession {
    /// `secret` encrypted in this session, for ``BusWriter/secret(_:_:contentType:)``.
    func seal(_ secret: Data) throws -> (parameters: [UInt8], value: [UInt8]) {
        do {
            return try encrypt(secret)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError.backendFailure(detail: "the secret could not be encrypted")
        }
    }
}

extension BusWriter {
    /// A `(oayays)` secret struct: the session, the IV and ciphertext of ``SecretSession/seal(_:)``,
    /// the content type.
    mutating func secret(
        _ session: SecretSession, _ sealed: (parameters: [UInt8], value: [UInt8]), contentType: String
    ) {
        align(8)
        string(session.path)
        byteArray(sealed.parameters)
        byteArray(sealed.value)
        string(contentType)
    }
}
