import CLinux
import FoundationEssentials
import Glibc
import KeychainAge
import KeychainStore
import KeychainSystem
import KeychainVault

/// The holder `keychain-cli unlock` starts: one per user, holding each unlocked vault's file key
/// (never its passphrase) until `lock`, the vault's time limit or its idle limit, and carrying
/// out the reads and writes of its clients with it. It takes clients of its own uid only, and
/// ends once it holds nothing.
package final class VaultHolder: Sendable {
    struct Held {
        let store: any HeldVault
        /// Boot seconds (the time suspended counts) at which the time limit ends, nil for none.
        let expires: Double?
        let idle: Double?
        var lastUse: Double
    }

    struct State {
        var vaults: [String: Held] = [:]
        /// Set once it has decided to end: a `hold` then is refused, and `unlock` starts another.
        var ending = false

        /// Forgets `vault`: its key and secrets are cleared, also from a write waiting for the
        /// vault's lock with it, which then writes nothing.
        mutating func forget(_ vault: String) -> Bool {
            guard let held = vaults.removeValue(forKey: vault) else { return false }
            held.store.forgetKey()
            return true
        }

        mutating func forgetAll() -> Int {
            defer { vaults = [:] }
            for held in vaults.values { held.store.forgetKey() }
            return vaults.count
        }

        mutating func forgetExpired(now: Double) {
            for (vault, held) in vaults where VaultHolder.expired(held, now: now) { _ = forget(vault) }
        }
    }

    let listener: Int32
    let place: HolderPlace
    /// The socket's inode: once the socket is gone or another (its directory removed, a cleaner),
    /// no client can reach this holder, and it ends rather than keep keys nobody can lock.
    let socketInode: UInt64
    let state = Locked(State())
    /// Seconds it waits for its first vault before ending.
    static let firstVaultSeconds = 30.0

    package init(listener: Int32, place: HolderPlace) {
        (self.listener, self.place) = (listener, place)
        var info = stat()
        socketInode = lstat(place.socket, &info) == 0 ? UInt64(info.st_ino) : 0
    }

    /// Whether clients still reach this holder's socket.
    private func reachable() -> Bool {
        var info = stat()
        return lstat(place.socket, &info) == 0 && UInt64(info.st_ino) == socketInode
    }

    /// Serves until it holds nothing: the last vault locked or expired, or none held within
    /// ``firstVaultSeconds`` of the start. Then it stops listening and removes its socket before
    /// it returns (and before the process lets go of the lock file): a client that comes later
    /// finds none, and `unlock` starts another holder, which takes the lock once this one is gone.
    /// `sleep`: the sleep watch, whose descriptors join the poll and which handles them after it.
    package func run(watching sleep: SleepWatch? = nil) throws(KeychainError) {
        let clients: FramedConnections<HolderRequest>
        do {
            clients = try FramedConnections(
                listener: listener, limit: HolderWire.limit, workers: Self.workers,
                decode: { body, _ in
                    var data = Data(body)
                    defer { wipe(&data) }
                    return try? JSONDecoder().decode(HolderRequest.self, from: data)
                },
                lane: Self.lane, answer: { [self] in HolderWire.framed(answer($0, cancellation: $1)) })
        } catch {
            throw .vaultIO(detail: "the holder: \(error)")
        }
        guard let events = HolderEvents(socket: place.socket) else {
            throw .vaultIO(detail: "the holder cannot watch its socket or set its timer")
        }
        let started = bootSeconds()
        var everHeld = false
        while true {
            events.wake(at: nextLimit() ?? (everHeld ? nil : started + Self.firstVaultSeconds))
            clients.serve(until: [events.timer, events.watch] + (sleep?.descriptors ?? []))
            events.drain()
            sleep?.handle()
            let now = bootSeconds()
            let reachable = reachable()
            let ended = state.withLock { state in
                state.forgetExpired(now: now)
                if !reachable {
                    _ = state.forgetAll()
                    state.ending = true
                }
                everHeld = everHeld || !state.vaults.isEmpty
                if state.vaults.isEmpty && (everHeld || now - started > Self.firstVaultSeconds) { state.ending = true }
                return state.ending
            }
            // A request under way is answered first: its write may have replaced the file.
            if ended && !clients.isWorking { break }
        }
        close(listener)
        if reachable() { unlink(place.socket) }
    }

    /// The most requests carried out at once: reads (and holds) and writes apart, so that reads,
    /// which take no lock, never wait behind writes waiting for a vault's.
    static let workers = [48, 16]

    /// `lock` and a status are answered at once, so that `lock` always gets through; the reads
    /// and writes of a vault, which may wait for its lock or its file, by workers.
    private static func lane(_ request: HolderRequest) -> FramedLane {
        switch request {
        case .forget, .status: .now
        case .hold: .worker(0)
        case .use(_, _, let operation): .worker(operation.writes ? 1 : 0)
        }
    }

    /// When the first of the vaults' limits ends (boot seconds), nil when none has one.
    private func nextLimit() -> Double? {
        state.withLock { state in
            state.vaults.values.flatMap { held in
                [held.expires, held.idle.map { held.lastUse + $0 }].compactMap(\.self)
            }.min()
        }
    }

    /// Forgets every vault now (a suspend): their keys go with their stores.
    package func forgetAll() {
        _ = state.withLock { $0.forgetAll() }
    }

    static func expired(_ held: Held, now: Double) -> Bool {
        if let expires = held.expires, now >= expires { return true }
        if let idle = held.idle, now - held.lastUse >= idle { return true }
        return false
    }

    /// What `request` gets; a write stops before it replaces the file once `cancellation` says
    /// its client went away.
    func answer(_ request: HolderRequest, cancellation: FramedCancellation) -> HolderReply {
        switch request {
        case .hold(let hold): return self.hold(hold)
        case .forget(let vault):
            let count = state.withLock { state in
                guard let vault else { return state.forgetAll() }
                return state.forget(vault) ? 1 : 0
            }
            return .forgotten(count, stillHeld: status())
        case .status:
            return .status(status())
        case .use(let vault, let deadline, let operation):
            return carryOut(operation, on: vault, until: deadline, cancellation: cancellation)
        }
    }

    /// `operation` on `vault` with the key held; `deadline` is the client's time: waited for the
    /// vault's lock until it ends, and no write replaces the file after it; nor once the vault is
    /// locked (its key is gone by then).
    private func carryOut(
        _ operation: HolderRequest.VaultOperation, on vault: String, until deadline: Double,
        cancellation: FramedCancellation
    ) -> HolderReply {
        guard let store = use(vault) else { return .notHeld }
        let check: @Sendable () throws(KeychainError) -> Void = { [self] () throws(KeychainError) in
            guard state.withLock({ $0.vaults[vault]?.store === store }) else { throw .vaultRekeyed(path: vault) }
            guard monotonicSeconds() < deadline, !cancellation.isCancelled else {
                throw .holderTimedOut(socket: place.socket, seconds: 0)
            }
        }
        do throws(KeychainError) {
            try check()
            let writer = store.waiting(deadline - monotonicSeconds(), check: check)
            return try carryOut(operation, reading: store, writing: writer)
        } catch .vaultRekeyed, .noMatchingIdentity, .noPassphrase, .wrongPassphrase {
            // Locked meanwhile, or re-keyed since (vault passwd, vault recipients): the key held
            // opens it no more.
            _ = state.withLock { state in state.vaults[vault]?.store === store ? state.forget(vault) : false }
            return .notHeld
        } catch {
            return .failed(error)
        }
    }

    /// What is held, and until when.
    private func status() -> [HolderReply.HeldVault] {
        let now = bootSeconds()
        return state.withLock { state in
            state.vaults.filter { !Self.expired($0.value, now: now) }.map { vault, held in
                HolderReply.HeldVault(
                    vault: vault, expiresIn: held.expires.map { $0 - now }, idle: held.idle,
                    unused: now - held.lastUse)
            }
        }
    }

    /// The store of `vault` if it is held and within its limits, its idle time restarted.
    private func use(_ vault: String) -> (any HeldVault)? {
        let now = bootSeconds()
        return state.withLock { state in
            guard let held = state.vaults[vault] else { return nil }
            guard !Self.expired(held, now: now) else {
                _ = state.forget(vault)
                return nil
            }
            state.vaults[vault]?.lastUse = now
            return held.store
        }
    }

    /// Holds `request.vault`. The key's bytes go from the request's one buffer (wiped when the
    /// request goes) straight into the header's key, which the store wipes when it forgets it.
    private func hold(_ request: HolderRequest.Hold) -> HolderReply {
        let vault = request.vault
        let store: any HeldVault
        if request.tree == true {
            guard
                let tree = request.fileKey.withBytes({ key in
                    TreeVaultStore.holding(
                        directory: vault, rawKey: key, type: request.identity ?? "X25519",
                        lockTimeout: defaultStoreTimeout)
                })
            else { return .failed(.vaultRekeyed(path: vault)) }
            store = tree
        } else {
            let header = request.fileKey.withBytes { key in
                AgeFile.Header(bytes: Array(request.header), fileKey: key, stanzaTypes: request.stanzaTypes)
            }
            store = VaultStore.holding(path: vault, header: header, lockTimeout: defaultStoreTimeout)
        }
        do throws(KeychainError) {
            // The vault as it is now must open with it: a vault re-keyed meanwhile is not held.
            guard try store.opensWithHeldKey() else { return .failed(.vaultRekeyed(path: vault)) }
        } catch {
            return .failed(error)
        }
        let now = bootSeconds()
        let held = Held(store: store, expires: request.ttl.map { now + $0 }, idle: request.idle, lastUse: now)
        let accepted = state.withLock { state in
            guard !state.ending else { return false }
            if let previous = state.vaults[vault], previous.store !== store { previous.store.forgetKey() }
            state.vaults[vault] = held
            return true
        }
        return accepted ? .done : .notHeld
    }

    private func carryOut(
        _ operation: HolderRequest.VaultOperation, reading store: any SecretStore, writing writer: any SecretStore
    ) throws(KeychainError) -> HolderReply {
        switch operation {
        case .secret(let address):
            return .secrets([
                try store.secret(service: try ServiceName(address.service), key: try KeychainKey(address.key))
            ])
        case .secrets(let addresses):
            return .secrets(
                try store.secrets(
                    of: try addresses.map { (address) throws(KeychainError) in
                        SecretAddress(service: try ServiceName(address.service), key: try KeychainKey(address.key))
                    }))
        case .store(let items):
            try writer.setSecrets(try secrets(items)) { _ in }
            return .done
        case .add(let items):
            return .added(try writer.addSecrets(try secrets(items)) { _ in })
        case .delete(let address):
            let deleted = try writer.deleteSecret(
                service: try ServiceName(address.service), key: try KeychainKey(address.key))
            return .deleted(deleted ? 1 : 0)
        case .deleteAll(let service):
            return .deleted(try writer.deleteAll(service: try ServiceName(service)))
        case .replace(let address, let expected, let new):
            return .added([
                try writer.replaceSecret(
                    service: try ServiceName(address.service), key: try KeychainKey(address.key), expected: expected,
                    with: new)
            ])
        case .items(let service):
            return .items(
                try store.items(
                    service: try service.map { (name) throws(KeychainError) in
                        try ServiceName(name)
                    }))
        }
    }

    private func secrets(_ items: [HolderRequest.Item]) throws(KeychainError) -> [SecretToStore] {
        try items.map { (item) throws(KeychainError) in
            SecretToStore(service: try ServiceName(item.service), key: try KeychainKey(item.key), secret: item.secret)
        }
    }
}

/// A vault the holder holds: a vault file with its file key, or a tree vault with an identity
/// that opens it.
package protocol HeldVault: AnyObject, SecretStore {
    /// Drops the key, here and in every writer made from this store.
    func forgetKey()
    /// Whether the key held still opens the vault as it is now.
    func opensWithHeldKey() throws(KeychainError) -> Bool
    /// This store (the same key) for a write that waits up to `lockTimeout` for the vault's lock,
    /// and that `check` may stop under the lock and before it replaces a file.
    func waiting(_ lockTimeout: Double, check: @escaping @Sendable () throws(KeychainError) -> Void) -> Self
}

extension VaultStore: HeldVault {}
extension TreeVaultStore: HeldVault {}
