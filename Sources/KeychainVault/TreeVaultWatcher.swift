import Glibc
import KeychainStore
import KeychainSystem

// How a tree vault is watched: every `interval` seconds its names are read and each item's file
// stamped (device, inode, size, times); only a file whose stamp changed since the last look is
// decrypted again, so a quiet vault of 10,000 items costs 10,000 `stat`s a look, not 10,000 X25519
// agreements. git writes a file in place (`checkout`, `pull`): one read while it writes may find
// half a file, which is looked at again until its file has been quiet for a moment.
extension TreeVaultStore {
    /// How long an item's file must stay unchanged before a damaged one counts as damaged.
    static let settleSeconds = 1.0

    /// Reports the items whose secret or modification date changed, were created or deleted.
    /// - Throws: the errors of reading the vault; an item that stays damaged (or stops opening)
    ///   for ``settleSeconds`` ends the watch with its error.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        let known = Locked<[String: (stamp: FileStamp, state: ItemState)]>([:])
        return try StoreWatch.polling(interval: interval, report: report) { [self] () throws(KeychainError) in
            var snapshot: [ItemID: ItemState] = [:]
            var seen: [String: (stamp: FileStamp, state: ItemState)] = [:]
            let before = known.withLock { $0 }
            for address in try addresses(service: service) {
                let id = ItemID(service: address.service.rawValue, key: address.key.rawValue)
                let file = try itemPath(address)
                guard let stamp = FileStamp(file) else { continue }  // removed meanwhile
                if let old = before[file], old.stamp == stamp {
                    (snapshot[id], seen[file]) = (old.state, old)
                    continue
                }
                do throws(KeychainError) {
                    guard let entry = try entry(at: address) else { continue }
                    let state = ItemState(
                        fingerprint: .digest(entry.secret, modified: entry.modified),
                        application: entry.details.map { $0.attributes["application"] } ?? "keychain-cli")
                    (snapshot[id], seen[file]) = (state, (stamp, state))
                } catch .itemCorrupt where Self.changedRecently(file) {
                    // Half written (git writes in place): as it was, and read again next time.
                    if let old = before[file] { (snapshot[id], seen[file]) = (old.state, old) }
                } catch .notSigned {
                    // No allowed signer signed it: not an item to watch (nor a reason to stop
                    // watching the others); a signed one it replaced is gone.
                    continue
                }
            }
            known.withLock { $0 = seen }
            return snapshot
        }
    }

    /// Whether `file` changed within the last ``settleSeconds``.
    private static func changedRecently(_ file: String) -> Bool {
        var info = stat()
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        guard stat(file, &info) == 0 else { return true }
        let changed = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - changed < settleSeconds
    }
}
