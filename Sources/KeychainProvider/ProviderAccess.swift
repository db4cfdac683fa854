internal import CLibSecret
import FoundationEssentials
import Glibc
import KeychainDBus
import KeychainStore
import KeychainSystem

/// The process behind a bus connection, as the bus daemon tells it (GetConnectionUnixProcessID,
/// GetConnectionUnixUser) and /proc shows its executable.
struct ProviderClient: Sendable {
    var pid: UInt32?
    var uid: UInt32?
    var executable: String?
}

/// One line of the access log.
private struct AccessRecord: Encodable {
    var time: Date
    var operation: String
    var service: String
    var key: String
    var allowed: Bool
    var pid: UInt32?
    var uid: UInt32?
    var executable: String?
}

extension SecretServiceProvider {
    /// What a client does to an item, as the log names it.
    enum Access: String {
        case read, write, delete
    }

    /// Records `access` to the item at `address` by the sender of `call`; a read by a program
    /// outside `--allow-exe` is recorded as refused and answered with D-Bus's AccessDenied.
    /// - Throws: ``ProviderError/accessDenied(_:)`` for a refused read, ``ProviderError/failed(_:)``
    ///   when the log cannot be written (serve then refuses every request: the log misses none).
    func check(_ access: Access, _ address: SecretAddress, by call: ProviderCall) throws(ProviderError) {
        guard try record(access, address, by: call) else { throw denial(call) }
    }

    /// Writes the line of `access` (when there is a log); whether it is allowed.
    /// - Throws: ``ProviderError/failed(_:)`` when the log cannot be written.
    func record(_ access: Access, _ address: SecretAddress, by call: ProviderCall) throws(ProviderError) -> Bool {
        guard policy.log != nil || policy.readers != nil else { return true }
        try requireWorkingLog()
        let client = client(call.sender)
        let allowed = access != .read || policy.allows(client.executable)
        let record = AccessRecord(
            time: Date(), operation: access.rawValue, service: address.service.rawValue, key: address.key.rawValue,
            allowed: allowed, pid: client.pid, uid: client.uid, executable: client.executable)
        if let failure = policy.append(record) {
            logFailure = failure
            try requireWorkingLog()
        }
        return allowed
    }

    /// Refuses every request once the log could not be written.
    func requireWorkingLog() throws(ProviderError) {
        if let logFailure {
            throw .failed(
                "this Secret Service provider cannot write its access log (\(logFailure)); it answers no request "
                    + "until restarted")
        }
    }

    /// The refusal of a read by a program outside `--allow-exe`.
    func denial(_ call: ProviderCall) -> ProviderError {
        .accessDenied(
            "this Secret Service provider lets only the programs it was told to allow read secrets; "
                + "\(client(call.sender).executable ?? "this client") is not one of them")
    }

    /// The process behind the bus name `sender`, asked of the bus once per connection.
    func client(_ sender: String) -> ProviderClient {
        if let known = clients[sender] { return known }
        func ask(_ method: String) -> UInt32? {
            busCall(method, Variant.tuple([Variant.string(sender)]), keychain_cli_type_uint32_reply())?.child(0).uint32
        }
        var client = ProviderClient(pid: ask("GetConnectionUnixProcessID"), uid: ask("GetConnectionUnixUser"))
        client.executable = client.pid.flatMap(AccessPolicy.executable(ofProcess:))
        clients[sender] = client
        return client
    }
}
