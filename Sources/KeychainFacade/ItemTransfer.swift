import FoundationEssentials
import KeychainStore
import KeychainSystem

/// Copies and moves items, within one store or from one store to another (`cp`, `mv`), with
/// every detail the target keeps (``SecretStore/itemDetails(service:key:)``).
///
/// A move never loses the secret, whenever it is stopped (SIGKILL included): within a store that
/// keeps details (the vault, a tree vault, OpenBao) it is the store's own move
/// (``DetailedSecretStore/updateItem(at:movingTo:_:)``: the vault's one write, OpenBao's
/// check-and-set); otherwise the secret is stored at the destination first and removed from the
/// source after, only if the source still holds what was copied
/// (``SecretStore/replaceSecret(service:key:expected:with:)``). Stopped between the two, the
/// secret is at both addresses, never at neither. A source another writer changed in between is
/// carried again (its new secret over the copy); one another writer removed (a second move) takes
/// the copy with it.
public struct ItemTransfer: Sendable {
    public let source: any SecretStore
    public let target: any SecretStore
    /// Whether `source` and `target` are one store (the same backend, the same vault).
    public let sameStore: Bool

    /// What a copy or a move did.
    public enum Outcome: Sendable, Equatable {
        case done
        /// Nothing is stored at the source: nothing was written.
        case missing
        /// Something is stored at the destination (and it was not to be replaced): nothing was written.
        case destinationTaken
        /// The secret was copied, but the source kept changing after it was read (three times),
        /// so it was left as it is: both addresses hold a secret, the destination the one read last.
        case sourceChanged
        /// The secret was copied, but removing it from the source failed (the backend's error):
        /// both addresses hold it.
        case sourceKept(KeychainError)
    }

    public init(source: any SecretStore, target: any SecretStore, sameStore: Bool) {
        (self.source, self.target, self.sameStore) = (source, target, sameStore)
    }

    /// Stores the secret at `from` (and its details) at `to`; what is at `to` is replaced only
    /// when `replacing`, else nothing is written there (decided as ``SecretStore/addSecret(_:service:key:)`` decides).
    /// - Throws: ``KeychainError`` when the source's backend cannot answer, ``TargetFailure`` when
    ///   the target's cannot answer or store it.
    public func copy(_ from: SecretAddress, to: SecretAddress, replacing: Bool) throws -> Outcome {
        guard var secret = try source.secret(service: from.service, key: from.key) else { return .missing }
        defer { wipe(&secret) }
        return try store(secret, from: from, to: to, replacing: replacing) ? .done : .destinationTaken
    }

    /// Moves the item at `from` to `to` (see the type's description for how); what is at `to` is
    /// replaced only when `replacing`.
    /// - Throws: as ``copy(_:to:replacing:)``; the secret is then at `from`, or at `to`, or at both.
    public func move(_ from: SecretAddress, to: SecretAddress, replacing: Bool) throws -> Outcome {
        if sameStore, let store = source as? any DetailedSecretStore {
            if replacing {
                // The destination goes first, then the move takes its place: a writer that adds
                // there in between keeps its item (destinationTaken), and the source stays.
                guard try store.containsSecret(service: from.service, key: from.key) else { return .missing }
                _ = try store.deleteItem(at: to) { _ in true }
            }
            let update = try store.updateItem(at: from, movingTo: to) {
                ItemContents(secret: $0.secret, details: $0.details?.relocated(from: from, to: to))
            }
            switch update {
            case .updated: return .done
            case .missing: return .missing
            case .destinationTaken: return .destinationTaken
            }
        }
        guard var secret = try source.secret(service: from.service, key: from.key) else { return .missing }
        defer { wipe(&secret) }
        guard try store(secret, from: from, to: to, replacing: replacing) else { return .destinationTaken }
        for _ in 0..<3 {
            // Removed only as it was read: a secret another writer stored there since stays.
            let removed: Bool
            do {
                removed = try source.replaceSecret(service: from.service, key: from.key, expected: secret, with: nil)
            } catch {
                return .sourceKept(error)
            }
            if removed { return .done }
            // Another writer got there between the copy and the removal. Removed (another move,
            // a delete): the copy goes too, as if that writer had come first. Changed: its new
            // secret is carried over the copy, as if it had been written before the move.
            guard var current = try source.secret(service: from.service, key: from.key) else {
                _ = try atTarget { () throws(KeychainError) in
                    try target.replaceSecret(service: to.service, key: to.key, expected: secret, with: nil)
                }
                return .missing
            }
            defer { wipe(&current) }
            let carried = try atTarget { () throws(KeychainError) in
                try target.replaceSecret(service: to.service, key: to.key, expected: secret, with: current)
            }
            guard carried else {
                return .sourceChanged  // the copy changed too: both are left as they are
            }
            swap(&secret, &current)
        }
        return .sourceChanged
    }

    private func store(_ secret: Data, from: SecretAddress, to: SecretAddress, replacing: Bool) throws -> Bool {
        let details = try source.itemDetails(service: from.service, key: from.key)?.relocated(from: from, to: to)
        let item = try source.item(service: from.service, key: from.key)
        let dates = ItemDates(created: item?.created, modified: item?.modified)
        return try atTarget { () throws(KeychainError) in
            try target.storeSecret(
                secret, details: details, dates: dates, service: to.service, key: to.key, replacing: replacing)
        }
    }

    /// `body`, on the target: its failure a ``TargetFailure`` (when the target is another store).
    private func atTarget<T>(_ body: () throws(KeychainError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            guard !sameStore else { throw error }
            throw TargetFailure(error: error)
        }
    }

    /// The target's backend failed (not the source's): its error.
    public struct TargetFailure: Error {
        public let error: KeychainError
    }
}
