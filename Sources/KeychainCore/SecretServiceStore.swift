import CLibSecret
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A ``SecretStore`` on the freedesktop Secret Service (gnome-keyring, KeePassXC, KWallet).
///
/// Writes and unlocking go through libsecret. Reads, lists and deletes call the Secret Service's
/// D-Bus API on the shared session bus, and reads decrypt secrets in a ``SecretSession`` the
/// store opens on its first read and keeps.
///
/// Items are written with the attributes `service`, `username` (the key) and
/// `application=keychain-cli` under the schema `org.freedesktop.Secret.Generic`, and found by
/// `service` and `username` alone, so items of secret-tool, python keyring, go-keyring and
/// keyring-rs are read and written too. Every wait is bounded by ``timeout``: an unanswered
/// unlock prompt becomes ``KeychainError/timedOut(operation:seconds:)``, never a hang.
public final class SecretServiceStore: SecretStore {
    /// The default limit on waiting for an answer, in seconds.
    public static let defaultTimeout = 5.0

    /// How much ``items(service:)`` asks the keyring about each item.
    public enum Listing: Sendable {
        /// Key, service, application, label and dates.
        case full
        /// Key, service and application only (`label`, `created`, `modified` are nil): gnome-keyring
        /// answers this in about half the time per item, which is most of the cost of a long list.
        case keysOnly
    }

    /// How long an operation waits for the Secret Service to answer, in seconds. The limit restarts
    /// at every answer, so long operations that keep progressing (a reset of thousands of items)
    /// finish, while an unanswered prompt or a stalled keyring ends in ``KeychainError/timedOut(operation:seconds:)``.
    public let timeout: Double
    /// What ``items(service:)`` reads of each item.
    public let listing: Listing

    /// An encrypted session and the bus connection (referenced) it was opened on.
    private struct KeptSession: @unchecked Sendable {
        let bus: OpaquePointer
        let session: SecretSession
    }
    /// The session of the last read, for the next one.
    private let kept = Mutex<KeptSession?>(nil)
    /// The object path of the kept session (for tests).
    var keptSessionPath: String? { kept.withLock { $0?.session.path } }

    /// Closes the kept session on the service but keeps it here, as a restarted service would
    /// have forgotten it (for tests: the service lets only the connection that opened a session
    /// close it).
    func closeKeptSessionOnTheService() throws {
        guard let path = keptSessionPath else { return }
        try BoundedOperation.run("close the session", seconds: timeout) { operation in
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            g_variant_unref(
                try operation.callMethod(bus, Self.busName, path, "org.freedesktop.Secret.Session", "Close", nil))
        }
    }

    /// A store whose operations give up when the Secret Service has not answered for `timeout` seconds.
    public init(timeout: Double = SecretServiceStore.defaultTimeout, listing: Listing = .full) {
        self.timeout = timeout
        self.listing = listing
    }

    deinit {
        kept.withLock { slot in
            if let old = slot { g_object_unref(UnsafeMutableRawPointer(old.bus)) }
        }
    }

    private var schema: UnsafePointer<SecretSchema> { keychain_cli_schema() }

    public func secret(service: ServiceName, key: KeychainKey) throws -> Data? {
        try BoundedOperation.run("return the secret", seconds: timeout) { operation in
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            // Searching first needs no encrypted session, so a miss costs no key exchange;
            // libsecret's lookup opens the session before it searches.
            let found = try searchPaths(operation, bus, ["service": service.rawValue, "username": key.rawValue])
            if found.unlocked.isEmpty && found.locked.isEmpty { return nil }
            // An item another client deletes after the search is not there: the next one, or a miss.
            for path in found.unlocked {
                if let secret = try readSecret(at: path, operation, bus) { return secret }
            }
            if found.locked.isEmpty { return nil }
            let unlocked = try unlock(found.locked, operation)
            guard !unlocked.isEmpty else {
                throw KeychainError.locked(detail: "the item is in a locked keyring that could not be unlocked")
            }
            for path in unlocked {
                if let secret = try readSecret(at: path, operation, bus) { return secret }
            }
            return nil
        }
    }

    /// The secret of the item at `path`, read in this store's encrypted session: opened on the
    /// first read and kept for later ones on the same connection, as libsecret keeps its own.
    /// A service that offers no such session is read through libsecret, which falls back to
    /// what the service offers. Nil when the item no longer exists.
    private func readSecret(at path: String, _ operation: BoundedOperation, _ bus: OpaquePointer) throws -> Data? {
        if let session = kept.withLock({ $0?.bus == bus ? $0?.session : nil }) {
            do {
                return try getSecret(at: path, in: session, operation, bus)
            } catch {
                // A restarted service no longer knows the session: negotiate a new one, once.
                // A read that ran out of time is not tried again.
                if case KeychainError.timedOut = error { throw error }
            }
        }
        guard let session = try openSession(operation, bus) else {
            return try readSecretThroughLibsecret(at: path, operation)
        }
        kept.withLock { slot in
            if let old = slot { g_object_unref(UnsafeMutableRawPointer(old.bus)) }
            g_object_ref(UnsafeMutableRawPointer(bus))
            slot = KeptSession(bus: bus, session: session)
        }
        return try getSecret(at: path, in: session, operation, bus)
    }

    /// Negotiates an encrypted session with the Secret Service (see ``SecretSession``); nil when
    /// the service does not offer one.
    private func openSession(_ operation: BoundedOperation, _ bus: OpaquePointer) throws -> SecretSession? {
        let exchange = SecretSession.KeyExchange()
        let publicValue = exchange.publicValue.withUnsafeBytes { buffer in
            g_variant_new_fixed_array(keychain_cli_type_byte(), buffer.baseAddress, gsize(buffer.count), 1)!
        }
        let parameters = g_variant_new_tuple(
            [g_variant_new_string(SecretSession.algorithm), g_variant_new_variant(publicValue)], 2)
        // org.freedesktop.Secret.Service.OpenSession(s algorithm, v input) -> (v output, o result)
        let reply = try operation.call(
            {
                g_dbus_connection_call(
                    bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
                    parameters, keychain_cli_type_open_session_reply(), G_DBUS_CALL_FLAGS_NONE, -1, $0, $1, $2)
            },
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
        guard g_variant_is_of_type(output, keychain_cli_type_bytestring()) != 0,
            let key = exchange.sharedKey(peer: variantBytes(output))
        else {
            throw KeychainError.backendFailure(
                detail: "the Secret Service answered the session's key exchange with an invalid public value")
        }
        return SecretSession(path: variantString(reply, child: 1), key: key)
    }

    /// The secret of the item at `path`, sent and decrypted in `session`; nil when the item is gone.
    private func getSecret(
        at path: String, in session: SecretSession, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> Data? {
        // org.freedesktop.Secret.Item.GetSecret(o session) -> ((oayays) secret)
        guard
            let reply = try operation.callItemMethod(
                bus, Self.busName, path, "org.freedesktop.Secret.Item", "GetSecret",
                g_variant_new_tuple([g_variant_new_object_path(session.path)], 1),
                replyType: keychain_cli_type_get_secret_reply())
        else { return nil }
        defer { g_variant_unref(reply) }
        let secret = g_variant_get_child_value(reply, 0)!
        defer { g_variant_unref(secret) }
        guard variantString(secret, child: 0) == session.path else {
            throw KeychainError.backendFailure(detail: "the Secret Service sent the secret in another session")
        }
        return try session.decrypt(parameters: variantBytes(secret, child: 1), value: variantBytes(secret, child: 2))
    }

    /// The secret of the item at `path` through libsecret, for a service without an encrypted session.
    private func readSecretThroughLibsecret(at path: String, _ operation: BoundedOperation) throws -> Data? {
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
    private func unlock(_ paths: [String], _ operation: BoundedOperation) throws -> [String] {
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

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws {
        // secret_value_new copies the bytes into (non-pageable) memory of its own.
        let value = secret.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return secret_value_new("", 0, "application/octet-stream")! }
            return secret_value_new(
                base.assumingMemoryBound(to: CChar.self), gssize(buffer.count), "application/octet-stream")!
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        try BoundedOperation.run("store the secret", seconds: timeout) { operation in
            let connection = try connect(operation, openSession: true)
            defer { g_object_unref(connection) }
            // An item another tool stored under the same service and key (with other extra
            // attributes) gets the new secret in place, so that every tool, and every later
            // lookup, sees one value; otherwise a new item is created.
            try search(operation, connection, ["service": service.rawValue, "username": key.rawValue]) { existing in
                var updated = 0
                for item in existing {
                    // secret_item_set_secret / secret_item_set_secret_finish; an item another
                    // client deleted since the search is skipped.
                    let done = try operation.call(
                        { secret_item_set_secret(item, value, $0, $1, $2) },
                        finish: { result, error in
                            secret_item_set_secret_finish(item, result, error) != 0 || !clearingVanishedItemError(error)
                        })
                    if done { updated += 1 }
                }
                if updated == 0 {
                    let attributes = makeAttributes([
                        "service": service.rawValue, "username": key.rawValue, "application": "keychain-cli",
                    ])
                    defer { g_hash_table_unref(attributes) }
                    let label = ItemInfo.defaultLabel(service: service, key: key)
                    // secret_service_store / secret_service_store_finish
                    _ = try operation.call(
                        {
                            secret_service_store(
                                connection, schema, attributes, SECRET_COLLECTION_DEFAULT, label, value, $0, $1, $2)
                        },
                        finish: { secret_service_store_finish(connection, $0, $1) })
                }
            }
        }
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws -> Bool {
        try deleteMatching(["service": service.rawValue, "username": key.rawValue], what: "delete the secret") > 0
    }

    /// Removes the items ``items(service:)`` lists for `service`, and no other: an item of another
    /// application with a `service` attribute but no `username` (node keytar's `account`, say) is
    /// neither listed nor deleted.
    public func deleteAll(service: ServiceName) throws -> Int {
        try deleteMatching(["service": service.rawValue], requiring: "username", what: "delete the service's secrets")
    }

    public func items(service: ServiceName?) throws -> [ItemInfo] {
        let pairs: KeyValuePairs<String, String> = service.map { ["service": $0.rawValue] } ?? [:]
        return try BoundedOperation.run("list the items", seconds: timeout) { operation in
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            // libsecret builds a D-Bus proxy per found item (about 0.9 ms each) and refuses an
            // empty search; asking for the paths, then for every item's properties in pipelined
            // Properties calls on the same connection, costs one round trip per window, and
            // gnome-keyring's own time per item (0.58 ms for GetAll, 0.27 ms for Attributes alone).
            let found = try searchPaths(operation, bus, pairs)
            let paths = found.unlocked + found.locked
            let replies = try operation.callEach(
                paths.count,
                start: { index, cancellable, callback, data in
                    var arguments = [g_variant_new_string("org.freedesktop.Secret.Item")]
                    if listing == .keysOnly { arguments.append(g_variant_new_string("Attributes")) }
                    g_dbus_connection_call(
                        bus, Self.busName, paths[index], "org.freedesktop.DBus.Properties",
                        listing == .keysOnly ? "Get" : "GetAll", g_variant_new_tuple(arguments, gsize(arguments.count)),
                        nil, G_DBUS_CALL_FLAGS_NONE, -1, cancellable, callback, data)
                },
                finish: { _, result, error in finishItemCall(bus, result, error) })
            return replies.compactMap { reply in
                guard let reply else { return nil }
                defer { g_variant_unref(reply) }
                return listing == .keysOnly ? Self.info(attributesReply: reply) : Self.info(properties: reply)
            }
        }
    }

    // MARK: libsecret steps, each one asynchronous call on a bounded operation

    /// The shared SecretService proxy; `openSession` negotiates the encrypted session that
    /// transferring secrets needs (a Diffie-Hellman exchange that metadata does not need).
    private func connect(_ operation: BoundedOperation, openSession: Bool) throws -> UnsafeMutablePointer<SecretService>
    {
        let flags = openSession ? SECRET_SERVICE_OPEN_SESSION : SECRET_SERVICE_NONE
        // secret_service_get / secret_service_get_finish
        return try operation.call(
            { secret_service_get(flags, $0, $1, $2) },
            finish: { secret_service_get_finish($0, $1) })!
    }

    /// Calls `body` with every item of every collection whose attributes include `pairs`, after
    /// asking the Secret Service to unlock the locked ones (which may prompt, within the deadline).
    private func search<T>(
        _ operation: BoundedOperation, _ connection: UnsafeMutablePointer<SecretService>,
        _ pairs: KeyValuePairs<String, String>, _ body: ([UnsafeMutablePointer<SecretItem>]) throws -> T
    ) throws -> T {
        let attributes = makeAttributes(pairs)
        defer { g_hash_table_unref(attributes) }
        let flags = SecretSearchFlags(rawValue: SECRET_SEARCH_ALL.rawValue | SECRET_SEARCH_UNLOCK.rawValue)
        // secret_service_search / secret_service_search_finish. libsecret loads every item it
        // finds, and fails the whole search when one was deleted by another client in between:
        // search again (a few times: each retry means another client is deleting items right now).
        var list: UnsafeMutablePointer<GList>?
        for attempt in 1...5 {
            var vanished = false
            list = try operation.call(
                { secret_service_search(connection, schema, attributes, flags, $0, $1, $2) },
                finish: { result, error in
                    let list = secret_service_search_finish(connection, result, error)
                    vanished = attempt < 5 && clearingVanishedItemError(error)
                    return list
                })
            if !vanished { break }
        }
        defer { g_list_free_full(list, g_object_unref) }
        var items: [UnsafeMutablePointer<SecretItem>] = []
        var node = list
        while let current = node {
            if let data = current.pointee.data { items.append(data.assumingMemoryBound(to: SecretItem.self)) }
            node = current.pointee.next
        }
        return try body(items)
    }

    /// Deletes every item whose attributes include `pairs`, and the attribute `requiring` when one
    /// is named (unlocking locked ones first), with pipelined Item.Delete calls: one proxy and one
    /// round trip per item took 15 s for 1,000. Items another client deleted meanwhile are not counted.
    private func deleteMatching(
        _ pairs: KeyValuePairs<String, String>, requiring: String? = nil, what: String
    ) throws -> Int {
        try BoundedOperation.run(what, seconds: timeout) { operation in
            let bus = try sessionBus(operation)
            defer { g_object_unref(UnsafeMutableRawPointer(bus)) }
            var found = try searchPaths(operation, bus, pairs)
            if let requiring {
                // The Secret Service searches by value only: read each item's attributes to keep
                // those that have the attribute at all.
                found.unlocked = try paths(found.unlocked, having: requiring, operation, bus)
                found.locked = try paths(found.locked, having: requiring, operation, bus)
            }
            let unlocked = try unlock(found.locked, operation)
            guard unlocked.count == found.locked.count else {
                throw KeychainError.locked(detail: "items to delete are in a locked keyring that could not be unlocked")
            }
            let paths = found.unlocked + unlocked
            // org.freedesktop.Secret.Item.Delete() -> (o prompt); "/" means no prompt is needed.
            let prompts = try operation.callEach(
                paths.count,
                start: { index, cancellable, callback, data in
                    g_dbus_connection_call(
                        bus, Self.busName, paths[index], "org.freedesktop.Secret.Item", "Delete", nil,
                        keychain_cli_type_object_path_reply(), G_DBUS_CALL_FLAGS_NONE, -1, cancellable, callback, data)
                },
                finish: { _, result, error in
                    finishItemCall(bus, result, error).map { reply in
                        defer { g_variant_unref(reply) }
                        return variantString(reply, child: 0)
                    }
                })
            if prompts.contains(where: { $0 != nil && $0 != "/" }) {
                throw KeychainError.permissionDenied(detail: "the Secret Service asks for confirmation to delete items")
            }
            return prompts.count { $0 != nil }
        }
    }

    /// Those of `paths` whose items have the attribute `name` (and still exist).
    private func paths(
        _ paths: [String], having name: String, _ operation: BoundedOperation, _ bus: OpaquePointer
    ) throws -> [String] {
        let replies = try operation.callEach(
            paths.count,
            start: { index, cancellable, callback, data in
                g_dbus_connection_call(
                    bus, Self.busName, paths[index], "org.freedesktop.DBus.Properties", "Get",
                    g_variant_new_tuple(
                        [g_variant_new_string("org.freedesktop.Secret.Item"), g_variant_new_string("Attributes")], 2),
                    nil, G_DBUS_CALL_FLAGS_NONE, -1, cancellable, callback, data)
            },
            finish: { _, result, error in
                finishItemCall(bus, result, error).map { reply in
                    defer { g_variant_unref(reply) }
                    let table = propertyValue(reply)
                    defer { g_variant_unref(table) }
                    return Self.dictionary(table)[name] != nil
                }
            })
        return zip(paths, replies).compactMap { $1 == true ? $0 : nil }
    }

    /// The bus name of the Secret Service: `$SECRET_SERVICE_BUS_NAME` or the well-known name, as
    /// libsecret chooses it; read once per process, as libsecret's shared service proxy did, not
    /// once per D-Bus call (a list of 1,000 items makes 1,001).
    private static let busName: String =
        getenv("SECRET_SERVICE_BUS_NAME").map { String(cString: $0) } ?? "org.freedesktop.secrets"

    /// The shared session bus connection, the one libsecret uses too, for the calls made without
    /// libsecret's service proxy. Building that proxy costs seven D-Bus calls before the first
    /// useful one (three AddMatch, two GetNameOwner, StartServiceByName, GetAll; seen with
    /// dbus-monitor), which reads, lists and deletes of unlocked items do not need: a `get` is
    /// Hello, SearchItems, OpenSession and GetSecret. The caller unrefs it.
    private func sessionBus(_ operation: BoundedOperation) throws -> OpaquePointer {
        // g_bus_get / g_bus_get_finish
        try operation.call({ g_bus_get(G_BUS_TYPE_SESSION, $0, $1, $2) }, finish: { g_bus_get_finish($0, $1) })!
    }

    /// The object paths of the items whose attributes include `pairs` (all items when `pairs`
    /// is empty, which libsecret's search refuses).
    private func searchPaths(
        _ operation: BoundedOperation, _ bus: OpaquePointer, _ pairs: KeyValuePairs<String, String>
    ) throws -> (unlocked: [String], locked: [String]) {
        let entries = pairs.map {
            g_variant_new_dict_entry(g_variant_new_string($0.key), g_variant_new_string($0.value))
        }
        let attributes = g_variant_new_array(keychain_cli_type_string_pair(), entries, gsize(entries.count))
        // org.freedesktop.Secret.Service.SearchItems(a{ss}) -> (ao unlocked, ao locked)
        let reply = try operation.callMethod(
            bus, Self.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
            g_variant_new_tuple([attributes], 1), replyType: keychain_cli_type_search_reply())
        defer { g_variant_unref(reply) }
        let lists = (0..<2).map { index in
            let paths = g_variant_get_child_value(reply, gsize(index))!
            defer { g_variant_unref(paths) }
            return (0..<Int(g_variant_n_children(paths))).map { variantString(paths, child: $0) }
        }
        return (lists[0], lists[1])
    }

    /// The key-only metadata in an item's `(v)` Properties.Get("Attributes") reply.
    private static func info(attributesReply reply: OpaquePointer) -> ItemInfo? {
        let table = propertyValue(reply)
        defer { g_variant_unref(table) }
        let attributes = dictionary(table)
        guard let service = attributes["service"], let key = attributes["username"] else { return nil }
        return ItemInfo(service: service, key: key, label: nil, application: attributes["application"])
    }

    /// The metadata in an item's `(a{sv})` Properties.GetAll reply, when the item can be
    /// addressed as (service, key); nil for other items (Wi-Fi passwords, browser keys).
    private static func info(properties reply: OpaquePointer) -> ItemInfo? {
        let dictionary = g_variant_get_child_value(reply, 0)!
        defer { g_variant_unref(dictionary) }
        func value(_ name: String) -> OpaquePointer? { g_variant_lookup_value(dictionary, name, nil) }
        var attributes: [String: String] = [:]
        if let table = value("Attributes") {
            defer { g_variant_unref(table) }
            attributes = Self.dictionary(table)
        }
        guard let service = attributes["service"], let key = attributes["username"] else { return nil }
        func number(_ name: String) -> guint64 {
            guard let variant = value(name) else { return 0 }
            defer { g_variant_unref(variant) }
            return g_variant_is_of_type(variant, keychain_cli_type_uint64()) != 0 ? g_variant_get_uint64(variant) : 0
        }
        var label: String?
        if let variant = value("Label") {
            defer { g_variant_unref(variant) }
            label = String(cString: g_variant_get_string(variant, nil))
        }
        return ItemInfo(
            service: service, key: key, label: label, application: attributes["application"],
            created: date(number("Created")), modified: date(number("Modified")))
    }

    /// The pairs of an `a{ss}` GVariant.
    private static func dictionary(_ table: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        for index in 0..<g_variant_n_children(table) {
            let entry = g_variant_get_child_value(table, index)!
            defer { g_variant_unref(entry) }
            result[variantString(entry, child: 0)] = variantString(entry, child: 1)
        }
        return result
    }

    private static func date(_ secondsSince1970: guint64) -> Date? {
        secondsSince1970 == 0 ? nil : Date(timeIntervalSince1970: Double(secondsSince1970))
    }
}
