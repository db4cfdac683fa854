#if canImport(Glibc)
    import Glibc
#endif

// How the vault is watched: inotify on its directory (writers, ours and `age`, replace the file
// by renaming a new one over it), then a re-read that decrypts only a file whose bytes changed,
// and pays scrypt only when its header changed too (this store's writes keep the header).
extension VaultStore {
    /// Reports the items whose secret or modification date changed, within milliseconds of the
    /// rename that replaced the file; the file is also looked at every `interval` seconds, for
    /// file systems that send no notifications (NFS).
    /// - Throws: ``KeychainError/vaultIO(detail:)`` when the vault's directory cannot be made or
    ///   watched; ``KeychainError/vaultRekeyed(path:)`` when, once read, it no longer opens (another
    ///   process changed its passphrase or recipients); the errors of reading the vault.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        let (directory, _) = splitPath(filePath)
        // A vault not written yet is watched from its directory, made as a first write makes it (0700).
        do {
            try makeDirectories(directory)
        } catch {
            throw .vaultIO(detail: error.description)
        }
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            throw .vaultIO(detail: "cannot watch the vault \(quotedPath(path)): \(String(cString: strerror(errno)))")
        }
        let mask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
        guard inotify_add_watch(descriptor, directory, UInt32(mask)) >= 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw .vaultIO(detail: "cannot watch the vault's directory \(quotedPath(directory)): \(reason)")
        }
        let directoryGone = Locked(false)
        return try StoreWatch.polling(
            interval: interval, report: report,
            wait: { watch, interval in
                if Self.waitForEvents(descriptor, seconds: interval, watch) { directoryGone.withLock { $0 = true } }
            },
            whenDone: { close(descriptor) },
            snapshot: { () throws(KeychainError) in
                if directoryGone.withLock({ $0 }) {
                    throw .vaultIO(detail: "the vault's directory \(quotedPath(directory)) was removed or moved away")
                }
                return try self.read { entries in
                    var snapshot: [ItemID: ItemState] = [:]
                    for (name, keys) in entries where service == nil || name == service {
                        for (key, entry) in keys {
                            snapshot[ItemID(service: name.rawValue, key: key.rawValue)] = ItemState(
                                fingerprint: .digest(entry.secret, modified: entry.modified),
                                application: "keychain-cli")
                        }
                    }
                    return snapshot
                }
            })
    }

    /// Waits until something happens in the watched directory, `seconds` pass, or the watch is
    /// cancelled (looked at every 100 ms); true when the directory itself is gone.
    private static func waitForEvents(_ descriptor: Int32, seconds: Double, _ watch: StoreWatch) -> Bool {
        var remaining = Int(seconds * 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while remaining > 0 && !watch.isCancelled {
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let slice = min(100, remaining)
            remaining -= slice
            guard poll(&request, 1, Int32(slice)) > 0 else { continue }
            var gone = false
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = buffer.withUnsafeBytes {
                        $0.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    }
                    if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 { gone = true }
                    offset += MemoryLayout<inotify_event>.size + Int(event.len)
                }
            }
            return gone
        }
        return false
    }
}
