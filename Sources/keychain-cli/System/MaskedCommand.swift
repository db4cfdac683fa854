import CLinux
import Glibc
import KeychainCore

// `exec` without --no-mask: keychain-cli stays the parent of the command and writes on what the
// command writes, with the secrets it was given hidden. This file alone calls the relay functions
// of CLinux (their state is one static copy per object file).

/// Runs `command` with its standard output and error passing through ``MaskingStream``s that
/// hide `forms`, and ends as it ended: its exit status, or the signal that ended it, raised again
/// (a shell shows 128+N). Its standard input is ours. An output that is a terminal is given to
/// it as a pty of ours with the terminal's settings and size (followed when it changes), so that
/// it still sees a terminal. Signals sent to keychain-cli are passed on. `cleanup` runs before
/// keychain-cli ends.
/// - Throws: ``CommandFailure`` when the command cannot be started (127, 126).
func runMasked(_ command: [String], hiding forms: [[UInt8]], cleanup: () -> Void) throws -> Never {
    let terminals = [STDOUT_FILENO, STDERR_FILENO].filter(isTerminal)
    var pty: (master: Int32, slave: Int32)? = nil
    if let like = terminals.first {
        var master: Int32 = -1
        var slave: Int32 = -1
        if keychain_cli_open_pty(like, &master, &slave) == 0 { pty = (master, slave) }
    }
    // Where the command's descriptor 1 and 2 go, and which of ours each source is written to.
    var sources: [(fd: Int32, target: Int32)] = []
    var given: [Int32] = []
    for target in [STDOUT_FILENO, STDERR_FILENO] {
        if let pty, terminals.contains(target) {
            given.append(pty.slave)
            if !sources.contains(where: { $0.fd == pty.master }) { sources.append((pty.master, target)) }
        } else if let pipe = makePipe() {
            _ = keychain_cli_set_pipe_size(pipe.write, 1 << 20)  // fewer, larger reads when it writes a lot
            given.append(pipe.write)
            sources.append((pipe.read, target))
        } else {
            throw CommandFailure(kind: .io, message: "cannot make a pipe (\(String(cString: strerror(errno))))")
        }
    }
    guard let wake = makePipe() else {
        throw CommandFailure(kind: .io, message: "cannot make a pipe (\(String(cString: strerror(errno))))")
    }
    _ = fcntl(wake.write, F_SETFL, O_NONBLOCK)
    // Where the terminal gives its signals to the command's process group (ours), they are not
    // passed on again; elsewhere the command has a process group of its own and gets each once.
    let ownGroup = !isTerminal(STDIN_FILENO)
    let passedOn = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM]
    _ = keychain_cli_relay_start(
        wake.write, terminals.first ?? -1, pty?.master ?? -1, ownGroup ? 1 : 0, passedOn, Int32(passedOn.count))
    // The command gets the signal mask we were given; this thread takes the signals it handles
    // even where the caller blocked them (they are passed on, and stay blocked in the command).
    var original = sigset_t()
    var handled = sigset_t()
    sigemptyset(&handled)
    for signal in passedOn + [SIGCHLD, SIGWINCH] { sigaddset(&handled, signal) }
    sigprocmask(SIG_UNBLOCK, &handled, &original)
    Startup.restoreForExec()  // the core limit we were given, for the command (we stay undumpable)
    let child = try spawn(command, output: given, ownGroup: ownGroup, mask: original)
    keychain_cli_relay_set_child(child)
    for fd in Set(given) { close(fd) }
    let status = relay(sources, child: child, wake: wake.read, hiding: forms)
    cleanup()
    exitAsCommand(status)
}

/// How long bytes that may begin a secret are held back when nothing more comes: a secret
/// written in two parts with a shorter pause between is still masked; a prompt that happens to
/// end like a secret begins is shown this much later.
private let quietMilliseconds: Int32 = 500

/// Writes on what `sources` give until the command has ended and they are closed (or quiet for a
/// moment once it has: a process it left behind may hold them open). Returns its wait status.
private func relay(_ sources: [(fd: Int32, target: Int32)], child: pid_t, wake: Int32, hiding forms: [[UInt8]]) -> Int32
{
    var open = sources.map { (fd: $0.fd, target: $0.target, stream: MaskingStream(hiding: forms), broken: false) }
    var status: Int32? = nil
    var endedAt = 0.0
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
    defer { buffer.deallocate() }
    var output: [UInt8] = []
    output.reserveCapacity(1 << 18 + 1024)
    func send(_ index: Int) {
        defer { output.removeAll(keepingCapacity: true) }
        guard !open[index].broken, !output.isEmpty else { return }
        if !output.withUnsafeBufferPointer({ writeAll(open[index].target, $0) }) {
            // Our reader is gone: so is the command's (it gets EPIPE or SIGPIPE, as it would have).
            open[index].broken = true
            close(open[index].fd)
            open[index].fd = -1
        }
    }
    while !open.filter({ $0.fd >= 0 }).isEmpty || status == nil {
        if status == nil, let ended = exitStatusIfEnded(child) {
            status = ended
            endedAt = monotonicSeconds()
        }
        let holding = open.contains { $0.fd >= 0 && $0.stream.isHolding }
        let quiet: Int32 = status != nil ? 100 : holding ? quietMilliseconds : -1
        var polled = open.filter { $0.fd >= 0 }.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        polled.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0))
        let ready = poll(&polled, nfds_t(polled.count), quiet)
        if ready < 0 && errno == EINTR { continue }
        if polled.last!.revents != 0 { _ = read(wake, buffer.baseAddress, 256) }
        if ready == 0 {
            // Quiet: what is held back is written as it is (it was no whole secret).
            for index in open.indices where open[index].fd >= 0 {
                open[index].stream.finish(into: &output)
                send(index)
            }
            if status != nil { break }  // ended, and what it left behind is quiet
            continue
        }
        for index in open.indices where open[index].fd >= 0 {
            guard let entry = polled.first(where: { $0.fd == open[index].fd }), entry.revents != 0 else { continue }
            let count = read(open[index].fd, buffer.baseAddress, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 {  // end of file (a pty's master: EIO once the command has closed it)
                open[index].stream.finish(into: &output)
                send(index)
                if open[index].fd >= 0 { close(open[index].fd) }
                open[index].fd = -1
                continue
            }
            open[index].stream.write(UnsafeRawBufferPointer(rebasing: buffer[..<count]), into: &output)
            send(index)
        }
        if status != nil && monotonicSeconds() - endedAt > 2 { break }  // a process left behind goes on writing
    }
    for index in open.indices where open[index].fd >= 0 {
        open[index].stream.finish(into: &output)
        send(index)
    }
    if let status { return status }
    var final: Int32 = 0
    while waitpid(child, &final, 0) == -1 && errno == EINTR {}
    return final
}

/// Ends keychain-cli as the command ended: with its exit status, or by the signal that ended it.
private func exitAsCommand(_ status: Int32) -> Never {
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
