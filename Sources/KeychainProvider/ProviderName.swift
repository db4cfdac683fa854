internal import CLibSecret
import FoundationEssentials
import Glibc
import KeychainDBus
import KeychainStore
import KeychainSystem

// Owning org.freedesktop.secrets, and noticing who leaves the bus.
extension SecretServiceProvider {
    /// Takes the name once the objects are on the bus, so that a client that sees it finds them.
    func requestName(replace: Bool) throws(KeychainError) {
        // DBUS_NAME_FLAG_ALLOW_REPLACEMENT (1): another `serve --replace` may take it over;
        // REPLACE_EXISTING (2); DO_NOT_QUEUE (4): fail now rather than wait for the name.
        let flags: UInt32 = 1 | (replace ? 2 : 0) | 4
        guard
            let reply = busCall(
                "RequestName",
                Variant.tuple([Variant.string(Self.name), Variant.uint32(flags)]),
                keychain_cli_type_uint32_reply())
        else { throw .noSessionBus(detail: "the bus did not answer RequestName") }
        // 1: primary owner; 4: already the owner. 2 (queued) cannot happen with DO_NOT_QUEUE.
        guard [1, 4].contains(reply.child(0).uint32) else {
            throw .nameTaken(
                name: Self.name, owner: ownerDescription() ?? "another process",
                conflict: replace ? .replacementRefused : .owned)
        }
    }

    /// The owner of the name as `command (pid N)`, or its bus name when the bus will not say more.
    func ownerDescription() -> String? {
        guard
            let reply = busCall(
                "GetNameOwner", Variant.tuple([Variant.string(Self.name)]), keychain_cli_type_string_reply())
        else { return nil }
        let owner = reply.child(0).string
        guard
            let pidReply = busCall(
                "GetConnectionUnixProcessID", Variant.tuple([Variant.string(owner)]), keychain_cli_type_uint32_reply())
        else { return owner }
        let pid = pidReply.child(0).uint32
        return "\(processCommand(pid)?.program ?? owner) (pid \(pid))"
    }

    /// Calls `method` on the bus itself; nil when it fails.
    func busCall(_ method: String, _ arguments: OwnedVariant, _ reply: OpaquePointer) -> OwnedVariant? {
        OwnedVariant(
            takingIfAny: g_dbus_connection_call_sync(
                connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method,
                arguments.raw, reply, G_DBUS_CALL_FLAGS_NONE, Int32(defaultStoreTimeout * 1000), nil, nil))
    }

    func subscribeToNameChanges() {
        nameSubscription = g_dbus_connection_signal_subscribe(
            connection, "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
            nil, G_DBUS_SIGNAL_FLAGS_NONE, providerNameOwnerChanged, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    /// A client left: its sessions go. Another process took our name: we stop.
    func nameOwnerChanged(name: String, newOwner: String) {
        if name == Self.name {
            let unique = String(cString: g_dbus_connection_get_unique_name(connection))
            if newOwner != unique {
                finish(.nameLost(owner: ownerDescription() ?? (newOwner.isEmpty ? "nobody" : newOwner)))
            }
            return
        }
        guard name.hasPrefix(":"), newOwner.isEmpty else { return }
        clients[name] = nil
        for (path, session) in sessions where session.owner == name { closeSession(path) }
    }

    func closeSession(_ path: String) {
        guard sessions.removeValue(forKey: path) != nil else { return }
        objectsRemoved([path], ProviderInterface.session)
    }
}

private let providerNameOwnerChanged: GDBusSignalCallback = { _, _, _, _, _, parameters, data in
    guard let parameters else { return }
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().nameOwnerChanged(
        name: variantString(parameters, child: 0), newOwner: variantString(parameters, child: 2))
}
