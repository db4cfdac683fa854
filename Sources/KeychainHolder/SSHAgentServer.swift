import CLinux
import FoundationEssentials
import Glibc
import KeychainSSH
import KeychainStore
import KeychainSystem

/// `keychain-cli ssh-agent`: an ssh-agent (draft-miller-ssh-agent, as OpenSSH's ssh, ssh-add,
/// ssh-keygen and git speak it) holding keys read from a backend or added by ssh-add. It answers
/// its own uid only, one poll thread for every client (``FramedConnections``, as unlock's
/// holder), with confirmations, locks and stores on worker threads; it records each signature it
/// is asked for (``AccessPolicy``) and ends on SIGTERM, SIGINT or SIGHUP, or once its socket is
/// removed, removing the socket.
package final class SSHAgentServer: Sendable {
    /// What the command line does for the agent.
    package struct Hooks: Sendable {
        /// Stores a key ssh-add added (`--store SERVICE`): the name it was stored under, or the
        /// error. Nil: keys added are held, never stored.
        package var store: (@Sendable (SSHPrivateKey) -> Result<String, KeychainError>)?
        /// Asks the user whether a key added with `ssh-add -c` may sign (`$SSH_ASKPASS`): true to
        /// allow. Given the prompt.
        package var confirm: @Sendable (String) -> Bool
        /// Told of what the agent did that its user should know (a key stored, a log failing),
        /// one line each.
        package var tell: @Sendable (String) -> Void

        package init(
            store: (@Sendable (SSHPrivateKey) -> Result<String, KeychainError>)?,
            confirm: @escaping @Sendable (String) -> Bool, tell: @escaping @Sendable (String) -> Void
        ) {
            (self.store, self.confirm, self.tell) = (store, confirm, tell)
        }
    }

    /// The largest request read: OpenSSH's agent's own limit (AGENT_MAX_LEN), and its length.
    static let messageLimit = 256 * 1024 + 4
    /// The most session-binds a connection makes (OpenSSH's agent: 16 hops).
    static let maximumBinds = 16

    private let listener: Int32
    private let socket: String
    private let socketInode: UInt64
    let keys: Locked<SSHAgentKeys>
    private let ttl: Double?
    let policy: AccessPolicy
    let hooks: Hooks
    /// The hosts each connection's client said it is bound to (session-bind@openssh.com).
    let bound = Locked<[Int: [(host: String, forwarding: Bool)]]>([:])
    /// Why the access log could not be written: then every signature is refused.
    let logFailure = Locked<String?>(nil)

    /// Serves `keys` on `listener`, bound at `socket`; `ttl`: each key is forgotten that long
    /// after it is added; `idle`: every key, once none signed for that long.
    package init(
        listener: Int32, socket: String, keys: [SSHPrivateKey], ttl: Double?, idle: Double?, policy: AccessPolicy,
        hooks: Hooks
    ) {
        let now = bootSeconds()
        let held = SSHAgentKeys(idle: idle, now: now)
        for key in keys { held.add(key, lifetime: ttl, confirm: false, now: now) }
        var info = stat()
        socketInode = lstat(socket, &info) == 0 ? UInt64(info.st_ino) : 0
        (self.listener, self.socket, self.keys, self.ttl) = (listener, socket, Locked(held), ttl)
        (self.policy, self.hooks) = (policy, hooks)
    }

    /// A request as read, or why it could not be: answered SSH_AGENT_FAILURE either way.
    enum Call: Sendable {
        case request(SSHAgentRequest, FramedPeer)
        case malformed(String)
    }

    /// Serves until SIGTERM, SIGINT or SIGHUP (which its starter's end sends, for -D and
    /// `-- COMMAND`) or the socket's removal; then forgets every key, stops listening and removes
    /// the socket if it is still this agent's.
    package func run() throws(KeychainError) {
        let signals = keychain_cli_ending_signals()
        guard signals >= 0, let events = HolderEvents(socket: socket) else {
            throw .backendFailure(detail: "the ssh-agent cannot watch its socket and signals")
        }
        defer { close(signals) }
        let clients: FramedConnections<Call>
        do {
            clients = try FramedConnections(
                listener: listener, limit: Self.messageLimit, workers: [8, 1, 1],
                decode: { body, peer in
                    do { return .request(try SSHAgentRequest(message: body), peer) } catch {
                        return .malformed("\(error)")
                    }
                },
                lane: { [self] in lane($0) }, answer: { [self] call, _ in Self.framed(answer(call)) })
        } catch {
            throw .backendFailure(detail: "the ssh-agent: \(error)")
        }
        clients.closed = { [bound] connection in bound.withLock { $0[connection] = nil } }
        while true {
            events.wake(at: keys.withLock { $0.nextLimit })
            clients.serve(until: [events.timer, events.watch, signals])
            events.drain()
            keys.withLock { $0.forgetExpired(now: bootSeconds()) }
            var received = false
            var information = [UInt8](repeating: 0, count: 128)  // a signalfd_siginfo
            while read(signals, &information, information.count) == information.count { received = true }
            if received || !reachable() { break }
        }
        keys.withLock { $0.removeAll() }
        close(listener)
        if reachable() { unlink(socket) }
    }

    private func reachable() -> Bool {
        var info = stat()
        return lstat(socket, &info) == 0 && UInt64(info.st_ino) == socketInode
    }

    /// At once, but what waits: a confirmation (the user), a lock's scrypt, a store's backend.
    private func lane(_ call: Call) -> FramedLane {
        guard case .request(let request, _) = call else { return .now }
        switch request {
        case .sign(let key, _, _): return keys.withLock { $0.find(key)?.confirm ?? false } ? .worker(0) : .now
        case .lock, .unlock: return .worker(1)
        case .add(_, let lifetime, _): return hooks.store != nil && lifetime == nil ? .worker(2) : .now
        default: return .now
        }
    }

    private static func framed(_ body: [UInt8]) -> [UInt8] {
        SSHAgentRequest.framedLength(body.count) + body
    }

    private func answer(_ call: Call) -> [UInt8] {
        guard case .request(let request, let peer) = call else { return SSHAgentRequest.failure }
        let now = bootSeconds()
        switch request {
        case .listKeys:
            return SSHAgentRequest.identities(keys.withLock { $0.listed })
        case .sign(let key, let data, let flags):
            return sign(key, data, flags: flags, for: peer)
        case .add(let key, let lifetime, let confirm):
            guard !keys.withLock({ $0.isLocked }) else { return SSHAgentRequest.failure }
            let limit = [lifetime.map(Double.init), ttl].compactMap(\.self).min()
            if let store = hooks.store, lifetime == nil {
                switch store(key) {
                case .success(let name): hooks.tell("stored the key \(key.publicKey.fingerprint) as \(name)")
                case .failure(let error):
                    hooks.tell("did not add the key \(key.publicKey.fingerprint): it cannot be stored (\(error))")
                    return SSHAgentRequest.failure
                }
            }
            keys.withLock { $0.add(key, lifetime: limit, confirm: confirm, now: now) }
            return SSHAgentRequest.success
        case .remove(let key):
            return keys.withLock { !$0.isLocked && $0.remove(key) } ? SSHAgentRequest.success : SSHAgentRequest.failure
        case .removeAll:
            return keys.withLock { keys in
                guard !keys.isLocked else { return SSHAgentRequest.failure }
                keys.removeAll()
                return SSHAgentRequest.success
            }
        case .lock(let password):
            let locked = password.withBytes { password in keys.withLock { $0.lock(password) } }
            return locked ? SSHAgentRequest.success : SSHAgentRequest.failure
        case .unlock(let password):
            let unlocked = password.withBytes { password in keys.withLock { $0.unlock(password, now: now) } }
            return unlocked ? SSHAgentRequest.success : SSHAgentRequest.failure
        case .bind(let hostKey, let forwarding):
            // As OpenSSH's agent: 16 hops at most, and none after the one made to log in.
            let accepted = bound.withLock { binds in
                let hops = binds[peer.connection] ?? []
                guard hops.count < Self.maximumBinds, hops.last?.forwarding != false else { return false }
                binds[peer.connection] = hops + [(hostKey.fingerprint, forwarding)]
                return true
            }
            return accepted ? SSHAgentRequest.success : SSHAgentRequest.failure
        case .unsupported:
            return SSHAgentRequest.failure
        }
    }
}
