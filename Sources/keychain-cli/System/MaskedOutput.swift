import CLinux
import Glibc
import KeychainCore

// Masked output, for `exec` (without --no-mask) and `serve -- COMMAND`: keychain-cli stays the
// parent of the command and writes on what it writes, with secrets hidden. This file alone calls
// the relay functions of CLinux (their state is one static copy per object file).

/// The secrets whose forms are hidden; `serve` adds those that pass through it as it runs.
final class OutputMasks: Sendable {
    private let state = Locked<(version: Int, forms: MaskForms, seen: Set<[UInt8]>)>((0, MaskForms(), []))

    init(_ secrets: [[UInt8]]) {
        for secret in secrets { add(secret) }
    }

    func add(_ secret: [UInt8]) {
        state.withLock { state in
            guard state.seen.insert(secret).inserted else { return }
            let forms = MaskedForms.of(secret)
            guard !forms.isEmpty else { return }
            state.forms += forms
            state.version += 1
        }
    }

    var current: (version: Int, forms: MaskForms) { state.withLock { ($0.version, $0.forms) } }
}

/// The command's standard output and error as keychain-cli receives them: a pty of ours for
/// each of ours that is a terminal (with that terminal's settings and size; one for both when
/// both are the same terminal), a pipe for one that is not (one for both when both are the same
/// pipe or file, `2>&1`: the command's writes then keep their order, as they would without us).
struct MaskedOutput {
    /// The command's descriptors 1 and 2 (close them once it runs: ``commandStarted(_:)``).
    let given: [Int32]
    /// What keychain-cli reads, and which of its own descriptors it writes that to.
    let sources: [(fd: Int32, target: Int32)]
    /// Each pty's master and the terminal whose size it follows.
    let ptys: [(master: Int32, terminal: Int32)]

    /// - Throws: ``CommandFailure`` (74) when no pipe can be made.
    static func open() throws -> MaskedOutput {
        var ptys: [(master: Int32, slave: Int32, terminal: Int32, device: dev_t)] = []
        var sources: [(fd: Int32, target: Int32)] = []
        var given: [Int32] = []
        var outputFile: (device: dev_t, inode: ino_t)? = nil
        for target in [STDOUT_FILENO, STDERR_FILENO] {
            var info = stat()
            let known = fstat(target, &info) == 0
            if known, !isTerminal(target) {
                // stderr on stdout's pipe or file: the pipe given for stdout takes both, in order.
                if let outputFile, outputFile == (info.st_dev, info.st_ino) {
                    given.append(given[0])
                    continue
                }
                if target == STDOUT_FILENO { outputFile = (info.st_dev, info.st_ino) }
            }
            if isTerminal(target), known {
                if let same = ptys.first(where: { $0.device == info.st_rdev }) {
                    given.append(same.slave)
                    continue
                }
                var master: Int32 = -1
                var slave: Int32 = -1
                if keychain_cli_open_pty(target, &master, &slave) == 0 {
                    ptys.append((master, slave, target, info.st_rdev))
                    given.append(slave)
                    sources.append((master, target))
                    continue
                }
            }
            if let pipe = makePipe() {
                _ = keychain_cli_set_pipe_size(pipe.write, 1 << 20)  // fewer, larger reads when it writes a lot
                given.append(pipe.write)
                sources.append((pipe.read, target))
            } else {
                throw pipeFailure()
            }
        }
        return MaskedOutput(given: given, sources: sources, ptys: ptys.map { ($0.master, $0.terminal) })
    }

    /// Passes signals on to `child` from now on (a terminal's to its whole group when it `leads`
    /// one), and closes our copies of the command's ends.
    func commandStarted(_ child: pid_t, leads: Bool = false) {
        passSignals(to: child, leads: leads)
        closeGiven()
    }

    /// Passes signals on to `child` from now on (0: holds them for the next command), without
    /// closing the command's ends: exec --restart-on-change gives them to the next one too.
    func passSignals(to child: pid_t, leads: Bool = false) {
        keychain_cli_relay_set_child(child, leads ? 1 : 0)
    }

    /// Closes our copies of the command's ends (its end of output is then the last command's).
    func closeGiven() {
        for fd in Set(given) { close(fd) }
    }

    /// The last SIGINT, SIGTERM, SIGHUP or SIGQUIT passed on since the last call, or nil.
    static func takeEndingSignal() -> Int32? {
        let signal = keychain_cli_relay_take_ending()
        return signal == 0 ? nil : signal
    }

    /// Before the command starts: follows the terminal's size on the pty (SIGWINCH), passing the
    /// change on to the command; with `wake`, also catches SIGCHLD (a byte on `wake`) and passes
    /// `signals` on to the command (which is not in our process group: ``JobControl``), but for
    /// those the command sent. A signal that comes before ``commandStarted(_:)`` is passed on then.
    func catchSignals(wake: Int32 = -1, passingOn signals: [Int32] = []) {
        let terminals = (0..<2).map { $0 < ptys.count ? ptys[$0].terminal : -1 }
        let masters = (0..<2).map { $0 < ptys.count ? ptys[$0].master : -1 }
        _ = keychain_cli_relay_start(wake, terminals, masters, signals, Int32(signals.count))
    }
}

func pipeFailure() -> CommandFailure {
    CommandFailure(kind: .io, message: "cannot make a pipe (\(String(cString: strerror(errno))))")
}

/// Runs `command` with its output masked (``relay(_:masks:wake:ended:)``), and ends as it ended:
/// its exit status, or the signal that ended it, raised again (a shell shows 128+N). Its standard
/// input is ours. Signals sent to keychain-cli are passed on. `cleanup` runs before keychain-cli ends.
/// `variables`, set in our environment for the command alone, are erased from it once the command
/// has started.
/// - Throws: ``CommandFailure`` when the command cannot be started (127, 126).
func runMasked(_ command: [String], hiding masks: OutputMasks, erasing variables: [String], cleanup: () -> Void)
    throws -> Never
{
    let output = try MaskedOutput.open()
    guard let wake = makePipe() else { throw pipeFailure() }
    _ = fcntl(wake.write, F_SETFL, O_NONBLOCK)
    let jobs = JobControl()
    let passedOn = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM] + jobs.alsoPassedOn
    output.catchSignals(wake: wake.write, passingOn: passedOn)
    // The command gets the signal mask we were given; this thread takes the signals it handles
    // even where the caller blocked them (they are passed on, and stay blocked in the command).
    var original = sigset_t()
    var handled = sigset_t()
    sigemptyset(&handled)
    for signal in passedOn + [SIGCHLD, SIGWINCH] { sigaddset(&handled, signal) }
    sigprocmask(SIG_UNBLOCK, &handled, &original)
    Startup.restoreForExec()  // the core limit we were given, for the command (we stay undumpable)
    let child = try spawn(command, output: output.given, group: jobs.commandGroup, mask: original)
    jobs.started(child)
    Environment.erase(variables)  // the command has its copy; ours would only wait here
    output.commandStarted(child, leads: jobs.commandGroup == 0)
    var status: Int32? = nil
    let lost = relay(output, masks: masks, wake: wake.read) {
        if status == nil { status = jobs.status(of: child) }
        return status != nil
    }
    if status == nil {
        var final: Int32 = 0
        while waitpid(child, &final, 0) == -1 && errno == EINTR {}
        status = final
    }
    jobs.finished(child)
    cleanup()
    if lost { exit(74) }
    exitAsCommand(status ?? 0)
}

/// How long an output may be quiet before what it holds back is let go as far as it may be
/// (``MaskingStream/release(into:)``: a prompt that could begin a secret shows, fewer than four
/// bytes of one; four or more wait for what follows, whatever the pause). Also how long a process
/// the command left behind may be quiet before keychain-cli stops passing its output on.
private let quietMilliseconds: Int32 = 500

/// Writes on what `output`'s sources give, masked, until the command has `ended` and they are
/// closed (or quiet for half a second once it has, at most 2 s: a process it left behind may hold
/// them open). `wake` becomes readable when `ended` may have changed. Where our reader has gone
/// (EPIPE), so does the command's; where a write fails otherwise (a full disk), the message says
/// so, the command's output is closed as well, and the result is true: output was lost.
/// `next` is when `ended` must be asked again at the latest (monotonic seconds; nil: when woken).
func relay(
    _ output: MaskedOutput, masks: OutputMasks, wake: Int32, next: () -> Double? = { nil }, ended: () -> Bool
) -> Bool {
    var (version, forms) = masks.current
    var open = output.sources.map {
        (fd: $0.fd, target: $0.target, stream: MaskingStream(hiding: forms), quietSince: Double?.none)
    }
    var endedAt: Double? = nil
    var lastRead = monotonicSeconds()
    // A read as large as the pipe (1 MiB): fewer reads and wake-ups when the command writes a lot.
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
    defer { buffer.deallocate() }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(1 << 20 + 1024)
    var lost = false
    func send(_ index: Int) {
        defer { bytes.removeAll(keepingCapacity: true) }
        guard open[index].fd >= 0, !bytes.isEmpty else { return }
        if !bytes.withUnsafeBufferPointer({ writeAll(open[index].target, $0) }) {
            // Our reader is gone: so is the command's (it gets EPIPE or SIGPIPE, as it would have).
            if errno != EPIPE {
                lost = true
                warn(
                    "cannot write the command's \(open[index].target == STDOUT_FILENO ? "output" : "errors") "
                        + "(\(String(cString: strerror(errno)))): the rest is lost, and keychain-cli exits 74 once the "
                        + "command ends. Check where they go (a full disk?)")
            }
            close(open[index].fd)
            open[index].fd = -1
        }
    }
    func finish(_ index: Int) {
        open[index].stream.finish(into: &bytes)
        open[index].quietSince = nil
        send(index)
    }
    let quiet = Double(quietMilliseconds) / 1000
    while open.contains(where: { $0.fd >= 0 }) || endedAt == nil {
        let now = monotonicSeconds()
        if endedAt == nil && ended() { endedAt = now }
        if let endedAt, now - endedAt > 2 { break }  // what it left behind goes on writing
        // An output quiet for half a second lets go of what it may (once: then it waits for more).
        for index in open.indices where open[index].quietSince.map({ now - $0 >= quiet }) == true {
            open[index].stream.release(into: &bytes)
            open[index].quietSince = nil
            send(index)
        }
        var deadlines = open.compactMap { $0.quietSince.map { $0 + quiet } }
        if endedAt != nil { deadlines.append(lastRead + quiet) } else if let next = next() { deadlines.append(next) }
        if !output.ptys.isEmpty {  // a terminal's change of size reaches its foreground group, often not us
            keychain_cli_relay_follow_sizes(0)
            deadlines.append(now + quiet)
        }
        let timeout = deadlines.min().map { Int32(max(0, ($0 - now) * 1000).rounded(.up)) } ?? -1
        var polled = open.filter { $0.fd >= 0 }.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        polled.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
        let ready = poll(&polled, nfds_t(polled.count), timeout)
        if ready < 0 && errno == EINTR { continue }
        if polled.last!.revents != 0 { _ = read(wake, buffer.baseAddress, 256) }
        // (After the wait: serve adds a secret before its client is answered, so before the
        // command can print it.)
        let latest = masks.current
        if latest.version != version {
            (version, forms) = latest
            for index in open.indices {
                open[index].stream.hide(forms, into: &bytes)
                send(index)
            }
        }
        // Ended, and what it left behind is quiet.
        if ready == 0, endedAt != nil, monotonicSeconds() - lastRead >= quiet { break }
        for index in open.indices where open[index].fd >= 0 {
            guard let entry = polled.first(where: { $0.fd == open[index].fd }), entry.revents != 0 else { continue }
            let count = read(open[index].fd, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            lastRead = monotonicSeconds()
            if count <= 0 {  // end of file (a pty's master: EIO once the command has closed it)
                finish(index)
                if open[index].fd >= 0 { close(open[index].fd) }
                open[index].fd = -1
                continue
            }
            open[index].stream.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), into: &bytes)
            open[index].quietSince = open[index].stream.isHolding ? lastRead : nil
            send(index)
        }
    }
    for index in open.indices { finish(index) }
    return lost
}

/// Ends keychain-cli as the command ended: with its exit status, or by the signal that ended it.
func exitAsCommand(_ status: Int32) -> Never {
    let signal = status & 0x7f
    guard signal != 0 else { exit((status >> 8) & 0xff) }
    Glibc.signal(signal, SIG_DFL)
    var only = sigset_t()
    sigemptyset(&only)
    sigaddset(&only, signal)
    sigprocmask(SIG_UNBLOCK, &only, nil)
    raise(signal)
    exit(128 + signal)  // a signal that does not end a process by default
}
