import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

// The Secret Service on our own session bus connection (BusWire) when the session bus is a Unix
// socket, so that `get` and `set` load no GLib, GIO or libsecret and start no GDBus worker thread:
// the authentication, Hello, SearchItems and OpenSession go out in one round trip (the session is
// kept for later calls), then GetSecret, or SetSecret or CreateItem. Any other bus is reached
// through GDBus (SecretServiceClient.swift has the operations, written once for both).

extension SecretServiceConnection {
    /// The direct connection kept for one bus address, and its encrypted session.
    final class DirectBus {
        let address: String
        let wire: BusWire
        let slot = SessionSlot<ServiceBus.Call>()

        init(address: String, wire: BusWire) { (self.address, self.wire) = (address, wire) }
    }

    /// Runs `body` on a client of the Secret Service: on the direct connection for the current bus
    /// address (opened on first use) when the bus is a Unix socket that accepts us, else on GDBus
    /// (GIO's shared connection, ``onBus(_:seconds:preparingSession:_:)``). `what` and `seconds` are its errors' words and its
    /// limit per answer; `preparingSession`: GDBus's connection computes our half of the key
    /// exchange while it connects.
    func withClient<T>(
        _ what: String, seconds: Double, preparingSession: Bool = false, _ body: (SecretServiceClient) throws -> T
    ) throws(KeychainError) -> T {
        var result: T?
        if try onDirectBus(what: what, seconds: seconds, { bus in result = try body(SecretServiceClient(self, bus)) }) {
            return result!
        }
        return try onBus(what, seconds: seconds, preparingSession: preparingSession) { operation, bus in
            try body(SecretServiceClient(self, operation, bus))
        }
    }

    /// Runs `body` on the direct connection for the current bus address (opened on first use;
    /// `what` and `seconds` are its errors' words and its limit per answer); false when this
    /// way cannot be taken: no address, not a Unix socket, a bus that refuses us.
    func onDirectBus(what: String, seconds: Double, _ body: (DirectBus) throws -> Void) throws(KeychainError) -> Bool {
        guard let address = Environment.value("DBUS_SESSION_BUS_ADDRESS") else { return false }
        return try direct.withLock { (kept: inout DirectBus?) throws(KeychainError) -> Bool in
            if let bus = kept, bus.address != address || bus.wire.closed { kept = nil }
            if kept == nil {
                guard let endpoint = SessionBusSocket.Endpoint(address),
                    let wire = BusWire(endpoint, operation: what, seconds: seconds)
                else { return false }
                kept = DirectBus(address: address, wire: wire)
            }
            let bus = kept!
            (bus.wire.operation, bus.wire.seconds) = (what, seconds)
            do {
                try body(bus)
                return true
            } catch let error as KeychainError {
                throw error
            } catch DBusError.refused {
                return false
            } catch let error as DBusError {
                throw KeychainError(error)
            } catch {
                throw .backendFailure(detail: "the Secret Service failed: \(error)")
            }
        }
    }
}
