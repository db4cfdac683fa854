internal import CLinux
import Glibc

/// A descriptor that another thread makes readable: a thread that waits on its own descriptors
/// with `poll` (a watcher on its bus connection) adds this one, and is woken by ``signal()``
/// (a cancellation) instead of looking on a tick. A pipe, both ends close-on-exec; once
/// signalled it stays readable.
package final class Wakeup: Sendable {
    /// The end to poll for reading; -1 when the system gave no pipe (the waiter then wakes at
    /// its deadlines only).
    package let descriptor: Int32
    private let writer: Int32

    package init() {
        var ends: [Int32] = [-1, -1]
        if keychain_cli_pipe_cloexec(&ends) != 0 { ends = [-1, -1] }
        (descriptor, writer) = (ends[0], ends[1])
        if writer >= 0 { _ = fcntl(writer, F_SETFL, O_NONBLOCK) }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writer >= 0 { close(writer) }
    }

    /// Makes ``descriptor`` readable, for good (a full pipe already is).
    package func signal() {
        guard writer >= 0 else { return }
        var byte: UInt8 = 1
        _ = write(writer, &byte, 1)
    }
}
