import CLinux
import Glibc
import KeychainSystem

/// What wakes the holder besides its clients, as descriptors its one poll waits on: a timer on
/// the boot clock (which counts the time suspended, as the vaults' limits do) set to the next
/// limit, and inotify on the socket's directory, which reports the socket removed or replaced.
/// The holder looks at its vaults and its socket when one of them fires, never on a tick.
final class HolderEvents {
    /// The timer (timerfd on CLOCK_BOOTTIME) and the directory's watch (inotify).
    let timer: Int32
    let watch: Int32

    /// Descriptors for the socket at `socket`; nil when the system gives none (the holder then
    /// cannot know when to look, and does not start).
    init?(socket: String) {
        timer = timerfd_create(CLOCK_BOOTTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        watch = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        let directory = String(socket[..<(socket.lastIndex(of: "/") ?? socket.startIndex)])
        let mask = UInt32(IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF)
        guard timer >= 0, watch >= 0, inotify_add_watch(watch, directory.isEmpty ? "/" : directory, mask) >= 0 else {
            if timer >= 0 { close(timer) }
            if watch >= 0 { close(watch) }
            return nil
        }
    }

    deinit {
        close(timer)
        close(watch)
    }

    /// Sets the timer to fire at `bootSeconds` (an absolute time of ``bootSeconds()``), or
    /// disarms it for nil.
    func wake(at bootSeconds: Double?) {
        var setting = itimerspec()
        if let bootSeconds {
            // Zero would disarm it: a time already past fires at once.
            let at = max(bootSeconds, 1e-9)
            setting.it_value = timespec(tv_sec: Int(at), tv_nsec: Int((at - at.rounded(.down)) * 1e9))
        }
        timerfd_settime(timer, Int32(TFD_TIMER_ABSTIME), &setting, nil)
    }

    /// Reads what is pending on both, so that the next poll waits for the next event.
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for fd in [timer, watch] {
            while read(fd, &buffer, buffer.count) > 0 {}
        }
    }
}
