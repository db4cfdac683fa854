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
    package let direct: any SecretStore
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

    /// The holder's reply to `operation` on this vault, or nil when the vault is to be opened
    /// directly. A connection the holder closed since the last request (it keeps a few hundred,
    /// closing those unused longest) is made again once: a request it never read is sent again.
    private func ask(_ operation: HolderRequest.VaultOperation) throws(KeychainError) -> HolderReply? {
        try connection.withLock { (state) throws(KeychainError) -> HolderReply? in
            let deadline = monotonicSeconds() + timeout
            let request = HolderRequest.use(
                vault: vault, deadline: deadline - Self.margin(timeout), operation: operation)
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
                guard case .success(let reply?) = answer else {
                    close(fd)
                    state = .some(.none)
                    _ = try answer.get()
                    return nil
                }
                switch reply {
                case .notHeld:
                    close(fd)
                    state = .some(.none)
                    return nil
                case .failed(.holderTimedOut(let socket, _)): throw .holderTimedOut(socket: socket, seconds: timeout)
                case .failed(let error): throw error
                default: return reply
                }
            }
            return nil
        }
    }

    private func items(_ secrets: [SecretToStore]) -> [HolderRequest.Item] {
        secrets.map { HolderRequest.Item(service: $0.service.rawValue, key: $0.key.rawValue, secret: $0.secret) }
    }

    private func address(_ service: ServiceName, _ key: KeychainKey) -> HolderRequest.Address {
        HolderRequest.Address(service: service.rawValue, key: key.rawValue)
    }

    /// A reply that is not the one `operation` gets: the holder is another version, or broken.
    private func unexpected(_ reply: HolderReply) -> KeychainError {
        .backendFailure(detail: "the holder gave an answer of the wrong kind")
    }

    // MARK: SecretStore

    package func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        guard let reply = try ask(.secret(address(service, key))) else {
            return try direct.secret(service: service, key: key)
        }
        guard case .secrets(let secrets) = reply, secrets.count == 1 else { throw unexpected(reply) }
        return secrets[0]
    }

    package func secrets(of addresses: [SecretAddress]) throws(KeychainError) -> [Data?] {
        guard let reply = try ask(.secrets(addresses.map { address($0.service, $0.key) })) else {
            return try direct.secrets(of: addresses)
        }
        guard case .secrets(let secrets) = reply, secrets.count == addresses.count else {
            throw .backendFailure(detail: "the holder answered \(reply.resultCount) secrets for \(addresses.count)")
        }
        return secrets
    }

    package func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try setSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }
    }

    package func checkName(service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try direct.checkName(service: service, key: key)
    }

    /// As the vault the holder holds writes (its file whole, or a tree vault's files one by one).
    package var writesManyAtOnce: Bool { direct.writesManyAtOnce }

    package func setSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) {
        guard let reply = try ask(.store(items(secrets))) else {
            return try direct.setSecrets(secrets, progress: progress)
        }
        guard case .done = reply else { throw unexpected(reply) }
        progress(secrets.count)
    }

    package func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try addSecrets([SecretToStore(service: service, key: key, secret: secret)]) { _ in }.first ?? false
    }

    package func addSecrets(_ secrets: [SecretToStore], progress: (Int) -> Void) throws(KeychainError) -> [Bool] {
        guard let reply = try ask(.add(items(secrets))) else {
            return try direct.addSecrets(secrets, progress: progress)
        }
        guard case .added(let added) = reply, added.count == secrets.count else {
            throw .backendFailure(detail: "the holder answered \(reply.resultCount) results for \(secrets.count)")
        }
        progress(secrets.count)
        return added
    }

    package func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        guard let reply = try ask(.delete(address(service, key))) else {
            return try direct.deleteSecret(service: service, key: key)
        }
        guard case .deleted(let count) = reply else { throw unexpected(reply) }
        return count == 1
    }

    package func replaceSecret(service: ServiceName, key: KeychainKey, expected: Data?, with new: Data?)
        throws(KeychainError) -> Bool
    {
        guard let reply = try ask(.replace(address(service, key), expected: expected, new: new)) else {
            return try direct.replaceSecret(service: service, key: key, expected: expected, with: new)
        }
        guard case .added(let replaced) = reply, replaced.count == 1 else { throw unexpected(reply) }
        return replaced[0]
    }

    package func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        guard let reply = try ask(.deleteAll(service: service.rawValue)) else {
            return try direct.deleteAll(service: service)
        }
        guard case .deleted(let count) = reply else { throw unexpected(reply) }
        return count
    }

    package func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        guard let reply = try ask(.items(service: service?.rawValue)) else { return try direct.items(service: service) }
        guard case .items(let items) = reply else { throw unexpected(reply) }
        return items
    }

    /// Watched on the file, as without a holder (the watcher decrypts it each time it changes).
    package func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        try direct.watch(service: service, interval: interval, report: report)
    }
}
