/// One line of `keychain-cli doctor`.
public struct HealthCheck: Sendable, Codable, Equatable {
    public enum Status: String, Sendable, Codable {
        /// The check passed.
        case ok
        /// The check failed; ``detail`` says why and what to do.
        case failed
        /// Not run, because an earlier check failed.
        case skipped
    }

    /// What was checked, e.g. "session bus".
    public var name: String
    public var status: Status
    /// What was found, or for a failure, the error's message with its fix.
    public var detail: String
}

/// Checks run in order, each skipped once one has failed: what the backends' `diagnose()` share.
package struct HealthReport {
    package private(set) var checks: [HealthCheck] = []
    /// The first failure's error.
    package private(set) var failure: KeychainError?

    package init() {}

    /// Runs `body` unless a check failed before; it returns what it found, or throws the failure.
    package mutating func run(_ name: String, _ body: () throws -> String) {
        guard failure == nil else {
            checks.append(HealthCheck(name: name, status: .skipped, detail: "an earlier check failed"))
            return
        }
        do {
            checks.append(HealthCheck(name: name, status: .ok, detail: try body()))
        } catch {
            let error = error as? KeychainError ?? .backendFailure(detail: "\(error)")
            failure = error
            checks.append(HealthCheck(name: name, status: .failed, detail: error.description))
        }
    }
}
