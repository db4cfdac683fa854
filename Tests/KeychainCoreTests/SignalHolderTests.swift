import Dispatch
import Foundation
import Synchronization
import Testing

@testable import KeychainCore

/// How many times each test's own handler ran (SIGUSR1, SIGUSR2: nothing else here uses them).
private let usr1Deliveries = Atomic<Int>(0)
private let usr2Deliveries = Atomic<Int>(0)

private func install(_ signal: Int32, _ handler: @convention(c) (Int32) -> Void) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = handler
    sigemptyset(&action.sa_mask)
    sigaction(signal, &action, nil)
}

/// Runs `body` on a thread of its own that takes `signal` (the test runner's threads block
/// signals, and a new thread inherits its creator's mask); the returned semaphore is signalled
/// when it has ended.
private func onThread(taking signal: Int32, _ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, signal)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        body()
        done.signal()
    }.start()
    return done
}

/// The signal holding around file replacement (`withSignalsHeldBack`), on signals of its own so
/// that the vault writes of other tests running meanwhile are not disturbed.
@Suite("SignalHolder: signals held back while a file is replaced", .serialized)
struct SignalHolderTests {
    @Test func aSignalRaisedInsideIsDeliveredOnceTheBodyEnds() {
        install(SIGUSR2) { _ in usr2Deliveries.add(1, ordering: .relaxed) }
        let holder = SignalHolder([SIGUSR2])
        let before = usr2Deliveries.load(ordering: .relaxed)
        let seen = Locked<(inside: Int, after: Int)?>(nil)
        onThread(taking: SIGUSR2) {
            let inside: Int = holder.hold {
                raise(SIGUSR2)
                return usr2Deliveries.load(ordering: .relaxed)
            }
            seen.withLock { $0 = (inside, usr2Deliveries.load(ordering: .relaxed)) }
        }.wait()
        #expect(seen.withLock { $0?.inside } == before)
        #expect(seen.withLock { $0?.after } == before + 1)
    }

    /// Two threads whose holds overlap, the first leaving while the second is still inside: the
    /// signal waits for the second, and afterwards the handler from before is back.
    @Test func overlappingHoldsPutTheEarlierHandlerBack() {
        install(SIGUSR1) { _ in usr1Deliveries.add(1, ordering: .relaxed) }
        let holder = SignalHolder([SIGUSR1])
        let before = usr1Deliveries.load(ordering: .relaxed)
        let firstIn = DispatchSemaphore(value: 0)
        let secondIn = DispatchSemaphore(value: 0)
        let firstOut = DispatchSemaphore(value: 0)
        let seenInside = Locked<Int?>(nil)
        let first = onThread(taking: SIGUSR1) {
            holder.hold {
                firstIn.signal()
                secondIn.wait()
            }
            firstOut.signal()
        }
        let second = onThread(taking: SIGUSR1) {
            firstIn.wait()
            holder.hold {
                secondIn.signal()
                firstOut.wait()
                raise(SIGUSR1)
                seenInside.withLock { $0 = usr1Deliveries.load(ordering: .relaxed) }
            }
        }
        first.wait()
        second.wait()
        #expect(seenInside.withLock { $0 } == before)
        #expect(usr1Deliveries.load(ordering: .relaxed) == before + 1)
        onThread(taking: SIGUSR1) { raise(SIGUSR1) }.wait()
        #expect(usr1Deliveries.load(ordering: .relaxed) == before + 2, "the handler from before is back")
    }
}
