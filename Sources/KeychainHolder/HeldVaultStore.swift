import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// The vault through this user's holder (`keychain-cli unlock`), for a command given no
/// passphrase: each operation is one request, which the holder carries out on the file with the
/// key it holds (reads see the file as it is then, writes take the vault's lock and replace it
/// atomically, as a ``VaultStore`` does). When no holder runs or it does not hold this vault (never
/// unlocked, locked, expired, re-keyed since), this and every later operation go to `direct`, the
/// vault opened as without a holder.
package final class HeldVaultStore: SecretStore {
    /// The vault's name at the holder (``HolderRequest/vaultKey(_:)``).
    package let vault: String
    let place: HolderPlace
    let timeout: Double
    let direct: any SecretStore
    /// The connection while the holder answers; nil before the first request, and `.none` for
    /// good once it is gone or does not hold the vault.
    private let connection = Locked<Int32??>(nil)

    /// Of the client's --timeout, the seconds left for the holder's answer to arrive after the
    /// holder's own deadline: it waits for the vault's lock, and replaces the file, only before
    /// that (a tenth of the timeout, a quarter of a second at most).
    static func margin(_ timeout: Double) -> Double { min(0.25, timeout / 10) }

    /// Whether a holder may run for this user: its socket exists. (One `stat`: the cost of a
    /// command on a vault nobody unlocked.)
    package static func mayHold(_ place: HolderPlace) -> Bool {
        var info = stat()
        return lstat(place.socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }

    package init(vault path: String, place: HolderPlace, timeout: Double, direct: any SecretStore) {
        self.vault = HolderRequest.vaultKey(path)
        self.place = place
        self.timeout = timeout
        self.direct = direct
    }

    deinit {
        connection.withLock { if case .some(.some(let fd)) = $0 { close(fd) } }
    }

    /// The holder's reply to `request`, or nil when the vault is to be opened directly. A
    /// connection the holder closed since the last request (it keeps a few hundred, closing
    /// those unused longest) is made again once: a request it never read is sent again.
    private func ask(_ request: HolderRequest) throws(KeychainError) -> HolderReply? {
        try connection.withLock { (state) throws(KeychainError) -> HolderReply? in
            let deadline = monotonicSeconds() + timeout
            var request = request
            (request.vault, request.deadline) = (vault, deadline - Self.margin(timeout))
            for attempt in 0..<2 {
                var fd: Int32
                var reused = false
                switch state {
                case .some(.none): return nil
                case .some(.some(let open)): (fd, reused) = (open, true)
                case .none:
                    // A holder of another uid, or a directory not private: not ours to ask, and the
                    // vault opens without it as if it were not there.
                    guard let open = try? place.connect(timeout: max(deadline - monotonicSeconds(), 0.001)) else {
                        state = .some(.none)
                        return nil
                    }
                    fd = open
                    state = .some(fd)
                }
                let answer = Result { () throws(KeychainError) in
                    try HolderWire.exchange(request, on: fd, socket: place.socket, deadline: deadline, seconds: timeout)
                }
                if case .success(nil) = answer, reused, attempt == 0 {
                    close(fd)
                    state = nil
                    continue
                }
                guard case .success(let reply?) = answer, reply.notHeld != true else {
                    close(fd)
                    state = .some(.none)
                    _ = try answer.get()
                    return nil
                }
                if case .holderTimedOut(let socket, _) = reply.error {
                    throw .holderTimedOut(socket: socket, seconds: timeout)
                }
                if let error = reply.error { throw error }
                return reply
            }
            return nil
        }
    }

    private func items(_ secrets: [SecretToStore]) -> [HolderRequest.Item] {
        secrets.map { HolderRequest.Item(service: $0.service.rawValue, key: $0.key.rawValue, secret: $0.secret) }
    }

    private func request(_ operation: HolderRequest.Operation, service: ServiceName?, key: KeychainKey? = nil)
        -> HolderRequest
    {
        var request = HolderRequest(operation, vault: vault)
        (request.service, request.key) = (service?.rawValue, key?.rawValue)
        return request
    }

    // MARK: SecretStore

    package func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        guard let reply = try ask(request(.secret, service: service, key: key)) else {
            return try direct.secret(service: service, key: key)
        }
        return reply.secrets?.first ?? nil
    }

    package func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        var request = HolderRequest(.secrets, vault: vault)
        request.items = addresses.map { HolderRequest.Item(service: $0.service.rawValue, key: $0.key.rawValue) }
        guard let reply = try ask(request) else { return try direct.secrets(of: addresses) }
        guard let secrets = reply.secrets, secrets.count == addresses.count else {
            throw .backendFailure(
                detail: "the holder answered \(reply.secrets?.count ?? 0) secrets for \(addresses.count)")
        }
        return secrets
    }

    package func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try setSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }
    }

    package func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        var request = HolderRequest(.store, vault: vault)
        request.items = items(secrets)
        guard try ask(request) != nil else { return try direct.setSecrets(secrets, progress: progress) }
        progress(secrets.count)
    }

    package func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try addSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }.first ?? false
    }

    package func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        var request = HolderRequest(.add, vault: vault)
        request.items = items(secrets)
        guard let reply = try ask(request) else { return try direct.addSecrets(secrets, progress: progress) }
        guard let added = reply.flags, added.count == secrets.count else {
            throw .backendFailure(detail: "the holder answered \(reply.flags?.count ?? 0) results for \(secrets.count)")
        }
        progress(secrets.count)
        return added
    }

    package func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        guard let reply = try ask(request(.delete, service: service, key: key)) else {
            return try direct.deleteSecret(service: service, key: key)
        }
        return reply.count == 1
    }

    package func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        guard let reply = try ask(request(.deleteAll, service: service)) else {
            return try direct.deleteAll(service: service)
        }
        return reply.count ?? 0
    }

    package func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        guard let reply = try ask(request(.items, service: service)) else { return try direct.items(service: service) }
        return reply.items ?? []
    }

    /// Watched on the file, as without a holder (the watcher decrypts it each time it changes).
    package func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        try direct.watch(service: service, interval: interval, report: report)
    }
}
