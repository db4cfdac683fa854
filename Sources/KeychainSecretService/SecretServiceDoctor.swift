internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore
import KeychainSystem

extension SecretServiceStore {
    /// Checks, in order, what the Secret Service backend needs: a session bus; a provider that
    /// owns or can activate `org.freedesktop.secrets`; a default collection; that it is unlocked;
    /// a store, lookup and delete of a probe item. Each check is bounded by ``timeout``; after a
    /// failure the rest are skipped.
    /// - Returns: the checks, and the error of the first failure (nil when all passed).
    public func diagnose() -> (checks: [HealthCheck], failure: KeychainError?) {
        var report = HealthReport()
        var connected: OwnedObject?
        var collection = ""

        report.run("session bus") {
            connected = try BoundedOperation.run("connect to the session bus", seconds: timeout) { operation in
                try connection.sharedSessionBus(operation)
            }
            let address = Environment.value("DBUS_SESSION_BUS_ADDRESS")
            return address.map { "connected (\($0))" } ?? "connected"
        }
        // Kept until the checks are done. The checks below run only when the first one connected.
        let bus = connected?.opaque
        defer { withExtendedLifetime(connected) {} }
        report.run("Secret Service provider") {
            let owned = try boolean(
                bus!, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner")
            if owned { return "org.freedesktop.secrets is owned\(providerDescription(bus!))" }
            let reply = try call(
                bus!, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListActivatableNames",
                nil)
            if reply.child(0).children.contains(where: { $0.string == "org.freedesktop.secrets" }) {
                return "org.freedesktop.secrets can be activated"
            }
            throw KeychainError.noSecretService(detail: "nothing owns or can activate org.freedesktop.secrets")
        }
        report.run("default keyring") {
            let reply = try call(
                bus!, "org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
                "ReadAlias",
                .tuple([g_variant_new_string("default")]))
            collection = reply.child(0).string
            guard collection != "/" else {
                throw KeychainError.noDefaultCollection(detail: "the alias 'default' points to no collection")
            }
            return collection
        }
        report.run("default keyring unlocked") {
            let reply = try call(
                bus!, "org.freedesktop.secrets", collection, "org.freedesktop.DBus.Properties", "Get",
                .tuple([g_variant_new_string("org.freedesktop.Secret.Collection"), g_variant_new_string("Locked")]))
            if propertyValue(reply).boolean {
                throw KeychainError.locked(detail: "\(collection) is locked")
            }
            return "yes"
        }
        report.run("store, read and delete a probe item") {
            let service = try ServiceName("keychain-cli-doctor")
            let key = try KeychainKey("probe-\(getpid())")
            let probe = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            try setSecret(probe, service: service, key: key)
            let read = try secret(service: service, key: key)
            let deleted = try deleteSecret(service: service, key: key)
            guard read == probe, deleted else {
                throw KeychainError.backendFailure(detail: "the probe item did not read back as stored")
            }
            return "ok"
        }
        return (report.checks, report.failure)
    }

    /// One D-Bus method call on `bus`, bounded by ``timeout``.
    private func call(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ parameters: OwnedVariant?
    ) throws -> OwnedVariant {
        try BoundedOperation.run("answer \(method)", seconds: timeout) { operation in
            try operation.callMethod(bus, destination, path, interface, method, parameters)
        }
    }

    /// ` by COMMAND (pid N)` for the process that owns the name, saying so when it is keychain-cli's
    /// own `serve`; empty when the bus will not tell.
    private func providerDescription(_ bus: OpaquePointer) -> String {
        guard
            let reply = try? call(
                bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                "GetConnectionUnixProcessID", .tuple([g_variant_new_string("org.freedesktop.secrets")]))
        else { return "" }
        let pid = reply.child(0).uint32
        guard let (program, arguments) = processCommand(pid) else { return " (pid \(pid))" }
        if program == "keychain-cli" && arguments.contains("serve") {
            return " by keychain-cli serve (pid \(pid)): its items are kept in that serve's backend"
        }
        return " by \(escapedForDisplay(program)) (pid \(pid))" + (Self.knownLimits[program].map { ": \($0)" } ?? "")
    }

    /// What differs, for keychain-cli, on Secret Service providers other than gnome-keyring
    /// (docs/backends/secret-service.md has the tested versions).
    static let knownLimits = [
        "keepassxc":
            "KeePassXC keeps the items in its database's exposed group; a locked database hides them "
            + "(77 until unlocked in its window); before 2.7.6 it asks in its window before an item another "
            + "program stored is replaced",
        "kwalletd5": kwallet,
        "kwalletd6": kwallet,
    ]

    private static let kwallet =
        "KWallet keeps the items in the wallet its kwalletrc names as default; a closed wallet asks for its "
        + "password in a window (or pam_kwallet5 opens it at login), and secret-tool and libsecret's other clients "
        + "fail about 1 store in 100 on it (keychain-cli's own session does not)"

    /// The answer of org.freedesktop.DBus.NameHasOwner("org.freedesktop.secrets") and the like.
    private func boolean(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ method: String
    ) throws -> Bool {
        let reply = try call(
            bus, destination, path, interface, method,
            .tuple([g_variant_new_string("org.freedesktop.secrets")]))
        return reply.child(0).boolean
    }
}
