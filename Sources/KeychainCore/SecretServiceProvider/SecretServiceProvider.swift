import CLibSecret
import FoundationEssentials
import Glibc

/// The Secret Service (`org.freedesktop.secrets`) served from a ``DetailedSecretStore``: what
/// `keychain-cli serve` runs, so that libsecret, python keyring, go-keyring and every other client
/// keep their secrets in the vault, a team vault or OpenBao.
///
/// It serves one collection, `login`, which is also the alias `default`, holding every item of
/// the backend. Every write is stored in the backend before the client gets its reply, and items
/// other processes write meanwhile appear as the backend's watcher reports them. Secrets are read
/// from the backend when asked for (the provider keeps no copy); the items' attributes, labels
/// and dates are kept in memory to answer searches and properties.
///
/// GDBus runs it: everything happens on the thread that calls ``run(watching:)``, one call at a
/// time, which is what keeps the backend's writes in the order clients made them.
public final class SecretServiceProvider: @unchecked Sendable {
    // @unchecked: the state below is touched only on the main loop's thread (every D-Bus call and
    // every reload run there); the backend's watcher thread only sets `reloadPending` and wakes
    // the loop.

    /// How a ``run(watching:)`` ended.
    public enum Exit: Sendable {
        /// SIGTERM, SIGINT or SIGHUP.
        case stopped
        /// The watched child exited; its wait status.
        case childExited(status: Int32)
        /// Another process took the name (`--replace`); its description.
        case nameLost(owner: String)
        /// The backend could no longer be read (a re-keyed vault, say).
        case backendFailed(KeychainError)
        /// The bus closed our connection (it went away, or dropped us).
        case busClosed
    }

    static let name = "org.freedesktop.secrets"
    /// The most secret bytes one GetSecrets reply carries (a session bus takes messages of 128 MiB
    /// by default).
    static let largestReply = 64 << 20

    let store: any DetailedSecretStore
    var index = ProviderIndex()
    var sessions: [String: ProviderSession] = [:]
    var lastSession = 0
    var locked = false
    var collectionLabel = "Login"
    let started = UInt64(Date().timeIntervalSince1970)
    var connection: OpaquePointer?
    var registrations: [String: [guint]] = [:]
    var loop: OpaquePointer?
    var exit: Exit?
    var child: pid_t?
    var watch: StoreWatch?
    let reloadPending = Locked(false)
    let watchFailure = Locked<KeychainError?>(nil)
    /// The items whose secret the backend's watcher saw change since the last reload: a secret
    /// written again within the same second changes nothing the index holds.
    let changedSecrets = Locked<Set<SecretAddress>>([])

    public init(store: any DetailedSecretStore) {
        self.store = store
    }

    /// Reads the backend's items (a vault asks its passphrase now), connects to the bus at
    /// `address`, puts the objects on it and takes the name.
    /// - Parameter replace: take the name from the process that owns it, if it allows that.
    /// - Throws: ``KeychainError/nameTaken(name:owner:conflict:)`` when another process owns the name;
    ///   the backend's errors; ``KeychainError/noSessionBus(detail:)``.
    public func start(busAddress address: String, replace: Bool) throws(KeychainError) {
        var error: UnsafeMutablePointer<GError>?
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error)
        guard connection != nil else {
            defer { g_error_free(error) }
            throw .noSessionBus(detail: "cannot connect to \(address): \(String(cString: error!.pointee.message))")
        }
        g_dbus_connection_set_exit_on_close(connection, 0)
        let closed: @convention(c) (OpaquePointer?, gboolean, UnsafeMutablePointer<GError>?, gpointer?) -> Void = {
            _, _, _, data in
            Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().finish(.busClosed)
        }
        g_signal_connect_data(
            UnsafeMutableRawPointer(connection), "closed", unsafeBitCast(closed, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, G_CONNECT_DEFAULT)
        // Before the passphrase is asked: a name already taken fails at once.
        if !replace, let owner = ownerDescription() {
            throw .nameTaken(name: Self.name, owner: owner, conflict: .owned)
        }
        try store.prepareForWrites()
        _ = index.replace(with: try store.detailedItems())
        try register(ProviderInterface.servicePath, ProviderInterface.service)
        try register(ProviderInterface.servicePath, ProviderInterface.objectManager)
        try register(ProviderIndex.collectionPath, ProviderInterface.collection)
        try register(ProviderIndex.aliasPath, ProviderInterface.collection)
        for number in index.items.keys { try register(ProviderIndex.path(of: number), ProviderInterface.item) }
        subscribeToNameChanges()
        try requestName(replace: replace)
        watch = try? store.watch(service: nil, interval: 2) { [self] event in
            switch event {
            case .failure(let failure): watchFailure.withLock { $0 = failure }
            case .change(let change) where change.kind == .changed:
                if let service = try? ServiceName(change.service), let key = try? KeychainKey(change.key) {
                    _ = changedSecrets.withLock { $0.insert(SecretAddress(service: service, key: key)) }
                }
            case .change: break
            }
            let wake = reloadPending.withLock { pending in
                defer { pending = true }
                return !pending
            }
            if wake { g_idle_add(providerReload, Unmanaged.passUnretained(self).toOpaque()) }
        }
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP, until `child` exits, or until the name is lost.
    /// With a `child`, those signals are passed on to it instead, and serving goes on until it
    /// exits (so that it is never left running without its bus).
    public func run(watching child: pid_t? = nil) -> Exit {
        loop = g_main_loop_new(nil, 0)
        self.child = child
        let me = Unmanaged.passUnretained(self).toOpaque()
        // A caller may have blocked them (a test runner's thread does): serve must still stop.
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for (signal, handler) in [(SIGTERM, providerSIGTERM), (SIGINT, providerSIGINT), (SIGHUP, providerSIGHUP)] {
            g_unix_signal_add(signal, handler, me)
            sigaddset(&stopping, signal)
        }
        pthread_sigmask(SIG_UNBLOCK, &stopping, nil)
        if let child { g_child_watch_add(child, providerChildExited, me) }
        g_main_loop_run(loop)
        watch?.cancel()
        if let connection { g_dbus_connection_close_sync(connection, nil, nil) }
        return exit ?? .stopped
    }

    /// SIGTERM, SIGINT or SIGHUP: passed on to the child, else the end.
    func received(_ signal: Int32) {
        if let child, exit == nil {
            kill(child, signal)
        } else {
            finish(.stopped)
        }
    }

    func finish(_ reason: Exit) {
        if exit == nil { exit = reason }
        g_main_loop_quit(loop)
    }

    /// Makes the index what the backend holds now and tells clients what changed: after another
    /// process wrote the backend.
    func reload() {
        reloadPending.withLock { $0 = false }
        if let failure = watchFailure.withLock({ $0 }) { return finish(.backendFailed(failure)) }
        guard let listing = try? store.detailedItems() else { return }
        let (added, listedChanges, removed) = index.replace(with: listing)
        var changed = listedChanges
        let rewritten = changedSecrets.withLock { addresses in
            defer { addresses.removeAll() }
            return addresses
        }
        for number in rewritten.compactMap({ index.holder(of: $0)?.number }) where !added.contains(number) {
            if !changed.contains(number) { changed.append(number) }
        }
        for number in added { try? register(ProviderIndex.path(of: number), ProviderInterface.item) }
        for number in removed { unregister(ProviderIndex.path(of: number)) }
        announce(created: added, changed: changed, deleted: removed)
    }

    /// Sends the collection's signals for items created, changed and deleted.
    func announce(created: [Int] = [], changed: [Int] = [], deleted: [Int] = []) {
        for (signal, numbers) in [("ItemCreated", created), ("ItemChanged", changed), ("ItemDeleted", deleted)] {
            for number in numbers {
                for collection in [ProviderIndex.collectionPath, ProviderIndex.aliasPath] {
                    emit(
                        ProviderInterface.collection, signal, from: collection,
                        Variant.tuple([Variant.objectPath(ProviderIndex.path(of: number))]))
                }
            }
        }
        objectsAdded(created.map(ProviderIndex.path(of:)), ProviderInterface.item)
        objectsRemoved(deleted.map(ProviderIndex.path(of:)), ProviderInterface.item)
        if !created.isEmpty || !deleted.isEmpty {
            propertiesChanged(
                ProviderInterface.collection, ["Items"], at: [ProviderIndex.collectionPath, ProviderIndex.aliasPath])
        }
    }
}

private let providerReload: GSourceFunc = { data in
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().reload()
    return 0
}

private let providerSIGTERM: GSourceFunc = { data in
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().received(SIGTERM)
    return 1
}

private let providerSIGINT: GSourceFunc = { data in
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().received(SIGINT)
    return 1
}

private let providerSIGHUP: GSourceFunc = { data in
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().received(SIGHUP)
    return 1
}

private let providerChildExited: GChildWatchFunc = { _, status, data in
    Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().finish(.childExited(status: status))
}
