import Glibc
import KeychainCore

// exec --restart-on-change: the command runs masked as `runMasked` runs it, and a change to what
// it was given stops it and starts it again, under the same masked output, signals passed on
// and job control. The watching and the re-reading are exec's (Commands/ExecRestart.swift).

/// One start of the command: its whole environment and what it is given.
struct CommandStart {
    /// Its whole environment, NAME=value (ours is not changed once the watches' threads run).
    var variables: [String]
    /// The secrets it is given, masked in what it writes (the earlier ones stay masked).
    var secrets: [[UInt8]]
    /// Removes what was made for it (its --file directory) once it has ended.
    var cleanup: () -> Void
}

/// How a change stops the command.
struct RestartPolicy {
    /// Sent to the command's process.
    var signal: Int32
    /// Seconds it has to end before SIGKILL.
    var grace: Double
    /// A burst of changes restarts once: when none came for `quiet` seconds (a watch that polls
    /// sees a burst a poll at a time: a poll's interval more), and at the latest `longest`
    /// seconds after its first change (a constant stream of writes still restarts).
    static let quiet = 0.25
    static let longest = 3.0
}

/// What the watches' threads saw, for the main thread: the changes of the burst under way, and
/// notes to print. Each wakes the relay (a byte on `wake`, where SIGCHLD writes too).
final class RestartRequests: Sendable {
    private let state = Locked<(first: Double?, last: Double?, notes: [String])>((nil, nil, []))
    let wake: (read: Int32, write: Int32)
    /// Seconds without a change that end a burst.
    private let quiet: Double

    /// - Throws: ``CommandFailure`` (74) when no pipe can be made.
    init(quiet: Double) throws {
        self.quiet = quiet
        guard let pipe = makePipe() else { throw pipeFailure() }
        _ = fcntl(pipe.write, F_SETFL, O_NONBLOCK)
        wake = pipe
    }

    /// A change to what the command was given.
    func changed() {
        let now = monotonicSeconds()
        state.withLock { state in
            state.first = state.first ?? now
            state.last = now
        }
        poke()
    }

    /// A line for stderr (without `keychain-cli: `).
    func note(_ message: String) {
        state.withLock { $0.notes.append(message) }
        poke()
    }

    /// When the burst under way is due to restart the command, if there is one.
    var dueAt: Double? {
        state.withLock { state in
            guard let first = state.first, let last = state.last else { return nil }
            return min(last + quiet, first + RestartPolicy.longest)
        }
    }

    /// Whether a burst is due now (it is then over: later changes begin another).
    func takeDue() -> Bool {
        guard let due = dueAt, monotonicSeconds() >= due else { return false }
        state.withLock { state in
            state.first = nil
            state.last = nil
        }
        return true
    }

    func takeNotes() -> [String] {
        state.withLock { state in
            defer { state.notes.removeAll() }
            return state.notes
        }
    }

    private func poke() {
        var byte: UInt8 = 0
        _ = write(wake.write, &byte, 1)
    }
}

/// Runs `command` as ``runMasked(_:hiding:erasing:cleanup:)`` does, starting it again whenever
/// `requests` has a burst of changes due and `next` gives what to start it with (nil: nothing
/// changed, or it cannot be read: the command keeps running; `next` says why). The command is
/// sent `policy.signal`, then SIGKILL after `policy.grace`, and started again once it has ended.
/// keychain-cli ends as the last command ended on its own; an ending signal passed on to it
/// (SIGINT, SIGTERM, SIGHUP, SIGQUIT) while it is being restarted ends it too.
/// - Parameter watch: starts the watches (their threads) once the signals are set up, and
///   returns what keeps them running.
/// - Throws: ``CommandFailure`` when the command cannot be started (127, 126), the first time or
///   again (then once the one before it has ended).
func runMaskedRestarting(
    _ command: [String], first: CommandStart, hiding masks: OutputMasks, policy: RestartPolicy,
    requests: RestartRequests, watch: () throws -> [Any], next: () -> CommandStart?
) throws -> Never {
    let output = try MaskedOutput.open()
    let jobs = JobControl()
    let passedOn = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM] + jobs.alsoPassedOn
    output.catchSignals(wake: requests.wake.write, passingOn: passedOn)
    var original = sigset_t()
    var handled = sigset_t()
    sigemptyset(&handled)
    for signal in passedOn + [SIGCHLD, SIGWINCH] { sigaddset(&handled, signal) }
    sigprocmask(SIG_UNBLOCK, &handled, &original)
    Startup.restoreForExec()
    let watches = try watch()
    var current = first
    var child = try spawn(
        command, output: output.given, group: jobs.commandGroup, mask: original, variables: first.variables)
    jobs.started(child)
    output.passSignals(to: child, leads: jobs.commandGroup == 0)
    // The command being stopped for a restart: when SIGKILL is due (nil once sent), and its successor.
    var stopping: (killAt: Double?, successor: CommandStart)? = nil
    var status: Int32? = nil
    var failure: (any Error)? = nil
    let wakeAt = { stopping == nil ? requests.dueAt : stopping?.killAt }
    let lost = relay(output, masks: masks, wake: requests.wake.read, next: wakeAt) {
        for note in requests.takeNotes() { warn(note) }
        if let ended = jobs.status(of: child) {
            guard let successor = stopping?.successor, MaskedOutput.takeEndingSignal() == nil else {
                stopping.map { $0.successor.cleanup() }
                status = ended
                output.closeGiven()
                return true
            }
            stopping = nil
            current.cleanup()
            current = successor
            output.passSignals(to: 0)  // a signal now waits for the next command
            do {
                let old = child
                child = try spawnAgain(command, output: output, jobs: jobs, mask: original, successor.variables)
                jobs.restarted(child, after: old)
                output.passSignals(to: child, leads: jobs.restartGroup == 0)
                return false
            } catch {
                failure = error
                status = ended
                output.closeGiven()
                return true
            }
        }
        if let killAt = stopping?.killAt {
            if monotonicSeconds() >= killAt {
                kill(child, SIGKILL)
                stopping?.killAt = nil
            }
            return false
        }
        guard stopping == nil, requests.takeDue(), let successor = next() else { return false }
        for secret in successor.secrets { masks.add(secret) }
        _ = MaskedOutput.takeEndingSignal()  // only those that come while it stops count
        kill(child, policy.signal)
        stopping = (monotonicSeconds() + policy.grace, successor)
        return false
    }
    if status == nil {
        var final: Int32 = 0
        while waitpid(child, &final, 0) == -1 && errno == EINTR {}
        status = final
    }
    withExtendedLifetime(watches) {}
    jobs.finished(child)
    current.cleanup()
    if let failure { throw failure }
    if lost { exit(74) }
    exitAsCommand(status ?? 0)
}

/// Starts the command again, in the job's process group where the first one stayed (or, when
/// that group is gone, one of its own).
private func spawnAgain(
    _ command: [String], output: MaskedOutput, jobs: JobControl, mask: sigset_t, _ variables: [String]
) throws -> pid_t {
    do {
        return try spawn(command, output: output.given, group: jobs.restartGroup, mask: mask, variables: variables)
    } catch let failure as CommandFailure where jobs.restartGroup != 0 && failure.kind == .cannotExecute {
        return try spawn(command, output: output.given, group: 0, mask: mask, variables: variables)
    }
}
