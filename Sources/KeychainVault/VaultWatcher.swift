import Glibc
import KeychainStore
import KeychainSystem

// How the vault is watched: inotify on its directories (writers, ours and `age`, replace the file
// by renaming a new one over it; git unlinks it and writes a new one in place), then a re-read
// that decrypts only a file whose bytes changed, and pays scrypt only when its header changed too
// (this store's writes keep the header). A read while a writer is at work may find no file or
// half a file: it is read again once the directory has been quiet for a moment, so that the watch
// rides through `git checkout`, a swapped Kubernetes secret directory and a re-key.
extension VaultStore {
    /// How long the vault's directory must stay quiet before a missing file counts as deleted and
    /// a damaged one as damaged (git writes a file of 1 MiB in about a millisecond).
    static let settleSeconds = 1.0

    /// Reports the items whose secret or modification date changed, within milliseconds of the
    /// write that replaced the file; the file is also looked at every `interval` seconds, for
    /// file systems that send no notifications (NFS).
    /// - Throws: ``KeychainError/vaultIO(detail:)`` when the vault's directory cannot be made or
    ///   watched, or is removed; ``KeychainError/vaultRekeyed(path:)`` when, once read, it no longer
    ///   opens for `lockTimeout` seconds (another process changed its passphrase or recipients,
    ///   and a passphrase file asked again does not hold the new one); ``KeychainError/vaultCorrupt(path:reason:)``
    ///   when it stays damaged; the other errors of reading the vault.
    public func watch(
        service: ServiceName?, interval: Double, report: @escaping @Sendable (WatchEvent) -> Void
    ) throws(KeychainError) -> StoreWatch {
        // A vault not written yet is watched from its directory, made as a first write makes it (0700).
        do {
            try makeDirectories(splitPath(filePath).directory)
        } catch {
            throw .vaultIO(detail: error.description)
        }
        let directories = try VaultDirectories(path: path)
        return try StoreWatch.polling(
            interval: interval, report: report,
            wait: { watch, interval in _ = directories.wait(seconds: interval, watch) },
            whenDone: { directories.close() },
            snapshot: { () throws(KeychainError) in try self.settledSnapshot(service, directories) })
    }

    /// The items of `service` (every service when nil) once the vault reads whole: a missing file,
    /// a damaged one and one that no longer opens are read again while the directory is busy (and
    /// a re-keyed one for `lockTimeout` seconds, asking the passphrase source again).
    private func settledSnapshot(_ service: ServiceName?, _ directories: VaultDirectories) throws(KeychainError)
        -> [ItemID: ItemState]
    {
        var rekeyedAt: Double?
        while true {
            if directories.directoryGone {
                throw .vaultIO(
                    detail: "the vault's directory \(quotedPath(splitPath(path).directory)) was removed or moved away")
            }
            let quiet = monotonicSeconds() - directories.lastEvent >= Self.settleSeconds
            do throws(KeychainError) {
                let (snapshot, present) = try readWithPresence { entries in Self.snapshot(of: entries, service) }
                if present || quiet { return snapshot }
            } catch .vaultCorrupt where !quiet {
                // Half written: read again once the writer is done.
            } catch .vaultRekeyed {
                let now = monotonicSeconds()
                rekeyedAt = rekeyedAt ?? now
                guard now - (rekeyedAt ?? now) < lockTimeout else { throw .vaultRekeyed(path: path) }
                forgetRekeyedPassphrase()
            }
            if !directories.wait(seconds: 0.1, nil) && directories.cancelled { return [:] }
        }
    }

    private static func snapshot(of entries: Entries, _ service: ServiceName?) -> [ItemID: ItemState] {
        var snapshot: [ItemID: ItemState] = [:]
        for (name, keys) in entries where service == nil || name == service {
            for (key, entry) in keys {
                snapshot[ItemID(service: name.rawValue, key: key.rawValue)] = ItemState(
                    fingerprint: .digest(entry.secret, modified: entry.modified), application: "keychain-cli")
            }
        }
        return snapshot
    }

    /// ``read(_:)``, and whether the file was there (a missing vault reads as empty).
    func readWithPresence<Result: Sendable>(_ body: (Entries) -> Result) throws(KeychainError) -> (
        result: Result, present: Bool
    ) {
        let contents = try load()
        return (body(contents.entries), contents.file != nil)
    }

    /// After ``KeychainError/vaultRekeyed(path:)``: forgets the passphrase (and header) that no
    /// longer open the vault, so that the next read asks the passphrase source again, as
    /// ``PassphrasePurpose/reopen``. Identities are tried again anyway.
    func forgetRekeyedPassphrase() {
        state.withLock { state in
            if let passphrase = state.passphrase { state.stalePassphrase = passphrase }
            state.passphrase = nil
            state.contents.header = nil
        }
    }
}

/// inotify on the directories a vault lives in: the directory of its path as given, and the
/// directory of the file its links lead to, looked up again after every change, so that a link
/// into a directory that is swapped atomically (a Kubernetes secret: `vault.age ->
/// ..data/vault.age`, `..data -> ..2026_11_24_…`) is followed to the new directory. Used on the
/// watcher's thread only.
// @unchecked: built and used on the watcher's thread only (it crosses into it once).
private final class VaultDirectories: @unchecked Sendable {
    let path: String
    let descriptor: Int32
    /// Watch descriptors by the real path of the directory watched.
    var watched: [String: Int32] = [:]
    /// When the last change was seen (monotonic seconds).
    var lastEvent = -Double.infinity
    /// The watch this waits for, once known.
    weak var watch: StoreWatch?

    static let mask = UInt32(
        IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

    init(path: String) throws(KeychainError) {
        self.path = path
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else {
            throw .vaultIO(detail: "cannot watch the vault \(quotedPath(path)): \(String(cString: strerror(errno)))")
        }
        let directory = splitPath(path).directory
        guard inotify_add_watch(descriptor, directory, Self.mask) >= 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(descriptor)
            throw .vaultIO(detail: "cannot watch the vault's directory \(quotedPath(directory)): \(reason)")
        }
        refresh()
    }

    /// Whether the directory of the path as given no longer exists (removed, or moved away).
    var directoryGone: Bool {
        var info = stat()
        return stat(splitPath(path).directory, &info) != 0 && (errno == ENOENT || errno == ENOTDIR)
    }

    var cancelled: Bool { watch?.isCancelled ?? false }

    /// Watches the directories the path leads through now, and no others.
    func refresh() {
        var wanted: Set<String> = []
        for directory in [splitPath(path).directory, splitPath(followingSymbolicLinks(path)).directory] {
            guard let real = realpath(directory, nil) else { continue }
            wanted.insert(String(cString: real))
            free(real)
        }
        for directory in wanted where watched[directory] == nil {
            let added = inotify_add_watch(descriptor, directory, Self.mask)
            if added >= 0 { watched[directory] = added }
        }
        for (directory, watch) in watched where !wanted.contains(directory) {
            inotify_rm_watch(descriptor, watch)
            watched[directory] = nil
        }
    }

    /// Waits until something changes in a watched directory, `seconds` pass, or the watch is
    /// cancelled (looked at every 100 ms); true when something changed.
    func wait(seconds: Double, _ watch: StoreWatch?) -> Bool {
        if let watch { self.watch = watch }
        var remaining = Int(seconds * 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while remaining > 0 && !cancelled {
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let slice = min(100, remaining)
            remaining -= slice
            guard poll(&request, 1, Int32(slice)) > 0 else { continue }
            while buffer.withUnsafeMutableBytes({ Glibc.read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
            lastEvent = monotonicSeconds()
            refresh()
            return true
        }
        return false
    }

    func close() { Glibc.close(descriptor) }
}
