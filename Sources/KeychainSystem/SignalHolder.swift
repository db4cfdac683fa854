import Glibc
import Synchronization

/// Which held-back signals arrived (bit n: signal n), set by the handler on whichever thread.
private let caughtSignals = Atomic<UInt64>(0)

/// Holds some signals back while a body runs: catches and remembers them, then, once no thread
/// is inside any more, puts the earlier handlers back and raises the ones that came, so that the
/// body is never interrupted half-way and a signal still has its usual effect afterwards.
///
/// Handlers are process-wide, so the first thread to enter installs the holding handlers and the
/// last to leave restores the earlier ones (were each to save and restore its own, two
/// overlapping writers could leave the holding handlers installed for good, and Ctrl-C ignored).
package final class SignalHolder: Sendable {
    /// SIGINT, SIGTERM, SIGHUP and SIGQUIT: the signals that end a program.
    package static let terminating = SignalHolder([SIGINT, SIGTERM, SIGHUP, SIGQUIT])

    private let signals: [Int32]
    private let mask: UInt64
    private let state = Locked<(depth: Int, previous: [sigaction])>((0, []))

    /// `signals`: standard signal numbers (below 64).
    package init(_ signals: [Int32]) {
        precondition(signals.allSatisfy { $0 > 0 && $0 < 64 })
        self.signals = signals
        mask = signals.reduce(0) { $0 | 1 << UInt64($1) }
    }

    /// Runs `body` with the signals held back.
    package func hold<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        let (signals, mask) = (self.signals, self.mask)
        state.withLock { state in
            defer { state.depth += 1 }
            guard state.depth == 0 else { return }
            var holding = sigaction()
            holding.__sigaction_handler.sa_handler = { signal in
                _ = caughtSignals.bitwiseOr(1 << UInt64(signal), ordering: .relaxed)
            }
            sigemptyset(&holding.sa_mask)
            _ = caughtSignals.bitwiseAnd(~mask, ordering: .relaxed)
            state.previous = Array(repeating: sigaction(), count: signals.count)
            for (index, signal) in signals.enumerated() { sigaction(signal, &holding, &state.previous[index]) }
        }
        defer {
            let caught = state.withLock { state -> UInt64 in
                state.depth -= 1
                guard state.depth == 0 else { return 0 }
                for (index, signal) in signals.enumerated() { sigaction(signal, &state.previous[index], nil) }
                return caughtSignals.bitwiseAnd(~mask, ordering: .relaxed).oldValue & mask
            }
            for signal in signals where caught & (1 << UInt64(signal)) != 0 { raise(signal) }
        }
        return try body()
    }
}

/// Runs `body` with the signals that end a program held back (``SignalHolder/terminating``).
package func withSignalsHeldBack<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure)
    -> Result
{
    try SignalHolder.terminating.hold(body)
}
