internal import CLibSecret
import FoundationEssentials
import KeychainStore

// What another process writes to the backend while serve runs: the watcher, its failures, and
// the reload that makes the index what the backend holds.
extension SecretServiceProvider {
    /// Watches the backend: for any change another process makes, the services it changed are
    /// made what the backend holds then (``reload(only:)``). serve's own writes come back too, and
    /// find the index as the backend answered them: one read of their service, no signal.
    func startWatching() {
        watch = try? login.store.watch(service: nil, interval: 2) { [self] event in
            if case .failure(let failure) = event { watchFailure.withLock { $0 = failure } }
            pendingReload.withLock { pending in
                if case .change(let change) = event, let service = try? ServiceName(change.service) {
                    pending.services?.insert(service)
                } else {
                    pending.services = nil
                }
                if pending.source == 0 {
                    pending.source = g_idle_add(providerReload, Unmanaged.passUnretained(self).toOpaque())
                }
            }
        }
    }

    /// Whether serve goes on after its watcher failed with `failure`: an OpenBao server that
    /// stopped answering, is sealed or has no leader comes back (the calls that need it fail
    /// meanwhile); a vault re-keyed, damaged or removed, or a token no longer valid, does not.
    static func outlives(_ failure: KeychainError) -> Bool {
        switch failure {
        case .serverUnavailable, .serverTimedOut, .openBao(.noMount), .openBao(.notKVVersion2),
            .openBao(.answerNotKVVersion2):
            true
        default: false
        }
    }

    /// Watches again after a failure serve outlives, and catches up with what changed meanwhile;
    /// tries again in 2 s while the backend cannot be watched.
    func watchAgain() {
        startWatching()
        if watch == nil { return retryWatching() }
        reload(only: nil)
    }

    func retryWatching() {
        retrySource = g_timeout_add_seconds(2, providerWatchAgain, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Makes the login collection's index what the backend holds now, for `services` (nil: every
    /// one), and tells clients what changed, after another process wrote the backend. serve's own
    /// writes put what the backend answered in the index, so they find nothing to announce again.
    func reload(only services: Set<ServiceName>?) {
        if let failure = watchFailure.withLock({ failure in
            defer { failure = nil }
            return failure
        }) {
            guard Self.outlives(failure) else { return finish(.backendFailed(failure)) }
            watch?.cancel()
            watch = nil
            return retryWatching()
        }
        let listing = try? services.map(login.store.detailedItems(in:)) ?? login.store.detailedItems()
        guard let listing else { return }
        let (added, changed, removed) = login.index.replace(with: listing, within: services)
        announce(login, created: added, changed: changed, deleted: removed)
    }
}

private let providerReload: GSourceFunc = { data in
    let provider = Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue()
    let services = provider.pendingReload.withLock { pending in
        defer { pending = PendingReload() }
        return pending.services
    }
    provider.reload(only: services)
    return 0
}

private let providerWatchAgain: GSourceFunc = { data in
    let provider = Unmanaged<SecretServiceProvider>.fromOpaque(data!).takeUnretainedValue()
    provider.retrySource = 0
    provider.watchAgain()
    return 0
}

/// A reload the watcher asked for: the idle source that will run it (0: none yet), and the
/// services whose items changed (nil: every service, after a report that names none).
struct PendingReload {
    var source: guint = 0
    var services: Set<ServiceName>? = []
}
