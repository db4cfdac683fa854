internal import CLibSecret
import FoundationEssentials
import Glibc
import KeychainDBus
import KeychainStore
import KeychainSystem

/// The Secret Service (`org.freedesktop.secrets`) served from a ``DetailedSecretStore``: what
/// `keychain-cli serve` runs, so that libsecret, python keyring, go-keyring and every other client
/// keep their secrets in the vault, a team vault or OpenBao.
///
/// It serves the collection `login`, also the alias `default`, holding every item of the
/// backend, and the collection `session`, whose items only its memory holds. Every write is
/// stored in the backend before the client gets its reply, deciding what it overwrites on what
/// the backend holds then (``DetailedSecretStore/addItem(_:details:at:)``,
/// ``DetailedSecretStore/updateItem(at:movingTo:_:)``), and items other processes write
/// meanwhile appear as the backend's watcher reports them. Secrets are read from the backend when
/// asked for (the provider keeps no copy); the items' attributes, labels and dates are kept in
/// memory to answer searches and properties: a view, never what decides a write.
///
/// GDBus runs it: everything happens on the thread that calls ``run(watching:)``, one call at a
/// time, which is what keeps the backend's writes in the order clients made them.
public final class SecretServiceProvider: @unchecked Sendable {
    // @unchecked: the state below is touched only on the main loop's thread (every D-Bus call and
    // every reload run there); the backend's watcher thread only adds the reload's idle source,
    // under the lock of `pendingReload` (ServeRaceTests race both threads; the TSan run, which
    // covers the library's own tests, does not reach serve).

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

    /// Every item of the backend.
    let login: ServedCollection
    /// Items kept in memory only, gone when serve stops (the specification's `session` alias).
    let sessionItems: ServedCollection
    var collections: [ServedCollection] { [login, sessionItems] }
    var sessions: [String: ProviderSession] = [:]
    var lastSession = 0
    var opened = false
    var handlingSignals = false
    /// Our bus connection, kept until the provider goes.
    var bus: OwnedObject?
    var connection: OpaquePointer? { bus?.opaque }
    /// What GLib calls back with this provider unretained, undone when ``run(watching:)`` ends:
    /// the connection's `closed` handler, the NameOwnerChanged subscription, the child's watch
    /// and the watcher's retry (0: none). The stopping signals' sources stay for the process.
    var closedHandler: gulong = 0
    var nameSubscription: guint = 0
    var childWatch: guint = 0
    var retrySource: guint = 0
    /// The parts of the object tree registered on the bus (GDBus holds them unretained).
    var subtrees: [ProviderSubtree] = []
    var loop: OpaquePointer?
    var exit: Exit?
    var child: pid_t?
    var watch: StoreWatch?
    /// The reload the watcher asked for, waiting for the main loop.
    let pendingReload = Locked(PendingReload())
    let watchFailure = Locked<KeychainError?>(nil)
    /// Told every secret a client sends or is sent (`serve -- COMMAND` masks them in the
    /// command's output); set before ``run(watching:)``.
    public var secretObserver: (@Sendable (Data) -> Void)?

    /// What is recorded of each access, and who may read (``AccessPolicy``).
    let policy: AccessPolicy
    /// The process behind each client's bus name, asked of the bus at its first access.
    var clients: [String: ProviderClient] = [:]
    /// Why the access log could not be written, once it could not (serve then answers nothing).
    var logFailure: String?

    public init(store: any DetailedSecretStore, policy: AccessPolicy = .unrestricted) {
        self.policy = policy
        let now = UInt64(Date().timeIntervalSince1970)
        login = ServedCollection(name: "login", store: store, label: "Login", created: now)
        sessionItems = ServedCollection(
            name: "session", store: InMemorySecretStore(), label: "Session", created: now)
    }

    /// Reads the backend's items (a vault asks its passphrase now), connects to the bus at
    /// `address`, puts the objects on it and takes the name.
    /// - Parameter replace: take the name from the process that owns it, if it allows that.
    /// - Throws: ``KeychainError/nameTaken(name:owner:conflict:)`` when another process owns the name;
    ///   the backend's errors; ``KeychainError/noSessionBus(detail:)``.
    public func start(busAddress address: String, replace: Bool) throws(KeychainError) {
        let flags = GDBusConnectionFlags(
            rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
        let (connected, error) = catchingError { g_dbus_connection_new_for_address_sync(address, flags, nil, nil, $0) }
        guard let connected else {
            throw .noSessionBus(detail: "cannot connect to \(address): \(error?.message ?? "unknown error")")
        }
        bus = OwnedObject(taking: UnsafeMutableRawPointer(connected))
        g_dbus_connection_set_exit_on_close(connection, 0)
        let closed: @convention(c) (OpaquePointer?, gboolean, UnsafeMutablePointer<GError>?, gpointer?) -> Void = {
            _, _, _, data in
            Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue().finish(.busClosed)
        }
        closedHandler = g_signal_connect_data(
            UnsafeMutableRawPointer(connection), "closed", unsafeBitCast(closed, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, G_CONNECT_DEFAULT)
        // Before the passphrase is asked: a name already taken fails at once.
        if !replace, let owner = ownerDescription() {
            throw .nameTaken(name: Self.name, owner: owner, conflict: .owned)
        }
        try open()
        try register(ProviderInterface.servicePath, .service)
        for collection in collections { try register(collection.path, .collection(collection)) }
        for alias in ServedCollection.aliases {
            try register(ServedCollection.aliasPrefix + alias, .collection(aliased(alias)!))
        }
        try register(String(ProviderInterface.sessionPrefix.dropLast()), .sessions)
        subscribeToNameChanges()
        try requestName(replace: replace)
        startWatching()
    }

    /// Opens the backend and reads its items (a vault asks its passphrase now, and pays its
    /// scrypt); ``start(busAddress:replace:)`` does it first thing after the name check, unless
    /// done before (`serve -- COMMAND` opens the backend before it makes its private bus, so
    /// that a signal during the opening leaves nothing behind).
    public func open() throws(KeychainError) {
        guard !opened else { return }
        try login.store.prepareForWrites()
        _ = login.index.replace(with: try login.store.detailedItems())
        // A token that may not read the secret-service secret still serves the rest.
        login.label = (try? login.store.collectionLabel()).flatMap { $0 } ?? login.label
        opened = true
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP, until `child` exits, or until the name is lost.
    /// With a `child`, those signals are passed on to it instead, and serving goes on until it
    /// exits (so that it is never left running without its bus).
    public func run(watching child: Int32? = nil) -> Exit {  // a pid_t
        loop = g_main_loop_new(nil, 0)
        self.child = child
        handleStoppingSignals()
        // A caller may have blocked them (a test runner's thread does): serve must still stop.
        var stopping = sigset_t()
        sigemptyset(&stopping)
        for signal in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&stopping, signal) }
        pthread_sigmask(SIG_UNBLOCK, &stopping, nil)
        if let child {
            childWatch = g_child_watch_add(child, providerChildExited, Unmanaged.passUnretained(self).toOpaque())
        }
        g_main_loop_run(loop)
        watch?.cancel()
        disconnect()
        if let connection { g_dbus_connection_close_sync(connection, nil, nil) }
        return exit ?? .stopped
    }

    /// Undoes what GLib would call back with this provider once ``run(watching:)`` is over.
    private func disconnect() {
        pendingReload.withLock { pending in
            if pending.source != 0 { g_source_remove(pending.source) }
            pending = PendingReload()
        }
        for source in [childWatch, retrySource] where source != 0 { g_source_remove(source) }
        (childWatch, retrySource) = (0, 0)
        if let connection {
            if closedHandler != 0 { g_signal_handler_disconnect(UnsafeMutableRawPointer(connection), closedHandler) }
            if nameSubscription != 0 { g_dbus_connection_signal_unsubscribe(connection, nameSubscription) }
        }
        (closedHandler, nameSubscription) = (0, 0)
    }

    /// From now on SIGTERM, SIGINT and SIGHUP are handled by ``run(watching:)``'s loop (they wait
    /// for it when they come before), whichever thread the kernel gives them to, instead of ending
    /// the process. Called again, it does nothing.
    public func handleStoppingSignals() {
        guard !handlingSignals else { return }
        handlingSignals = true
        let me = Unmanaged.passUnretained(self).toOpaque()
        for (signal, handler) in [(SIGTERM, providerSIGTERM), (SIGINT, providerSIGINT), (SIGHUP, providerSIGHUP)] {
            g_unix_signal_add(signal, handler, me)
        }
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

    /// Sends the signals for items created, changed and deleted in `collection`: each once, from
    /// the collection's path, as gnome-keyring sends them.
    func announce(_ collection: ServedCollection, created: [Int] = [], changed: [Int] = [], deleted: [Int] = []) {
        for (signal, numbers) in [("ItemCreated", created), ("ItemChanged", changed), ("ItemDeleted", deleted)] {
            for number in numbers {
                emit(
                    ProviderInterface.collection, signal, from: collection.path,
                    Variant.tuple([Variant.objectPath(collection.path(of: number))]))
            }
        }
        objectsAdded(created.map(collection.path(of:)), ProviderInterface.item)
        objectsRemoved(deleted.map(collection.path(of:)), ProviderInterface.item)
        if !created.isEmpty || !deleted.isEmpty {
            propertiesChanged(ProviderInterface.collection, ["Items"], at: collection.path)
        }
    }
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
    let provider = Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue()
    provider.childWatch = 0
    provider.finish(.childExited(status: status))
}
