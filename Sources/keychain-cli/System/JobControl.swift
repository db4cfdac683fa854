import Glibc

/// Where `exec`'s masked command runs: never in keychain-cli's process group, so that a signal
/// sent to a group reaches the command once (directly, or through keychain-cli, never both), and
/// where a terminal's signals and reads go as they would without keychain-cli.
///
/// - keychain-cli leads its group (a shell with job control started it: the group is the job):
///   the command gets a group of its own, and the terminal's foreground when keychain-cli had
///   it, so Ctrl-C, `/dev/tty` and turning echo off reach the command. Like a shell, keychain-cli
///   waits for the command's stops too: when it stops (Ctrl-Z, or SIGTTIN/SIGTTOU in the
///   background), keychain-cli takes the terminal back and stops itself, and when it is continued
///   (`fg`, `bg`, SIGCONT), gives the terminal back if it is in the foreground and continues the
///   command. Where its output is a pipe (`exec -- cmd | less`: the pipe's reader may share the
///   group and read the terminal), the command gets the foreground only when it stops to use the
///   terminal (SIGTTIN, SIGTTOU), until it ends; then the group is continued (SIGCONT) for a
///   reader stopped meanwhile.
/// - Otherwise (a script, make or a later process of a pipeline started it, in their group, or
///   CI): the command starts in that group and keychain-cli leaves it at once for a group of its
///   own: the command gets the terminal's signals and the group's as any command of the script
///   would, and keychain-cli passes on only what is sent to it. When the command stops at the
///   terminal (Ctrl-Z to that group, SIGTTIN, SIGTTOU), keychain-cli goes back into the group and
///   stops, so that the shell sees the whole job stopped and its `fg` or `bg` (SIGCONT to the
///   group) continues keychain-cli too, which then leaves again.
///
/// Stops are answered only where there is a controlling terminal: elsewhere no shell waits for
/// a job, and whoever stopped the command continues it.
struct JobControl {
    /// The controlling terminal (close-on-exec), or -1.
    private let terminal: Int32
    /// The group keychain-cli started in, where the command stays (nil: keychain-cli leads it,
    /// and the command gets a group of its own).
    private let job: pid_t?
    /// Whether the command gets the foreground as it starts (else when it stops to use the terminal).
    private let atOnce: Bool

    init() {
        terminal = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        job = getpgrp() == getpid() ? nil : getpgrp()
        var info = stat()
        atOnce = fstat(STDOUT_FILENO, &info) != 0 || ![S_IFIFO, S_IFSOCK].contains(info.st_mode & S_IFMT)
    }

    /// The command's process group for ``spawn(_:output:group:mask:)``: 0, one of its own, or
    /// nil, ours (which keychain-cli then leaves: ``started(_:)``).
    var commandGroup: pid_t? { job == nil ? 0 : nil }

    /// The signals keychain-cli passes on to the command besides those that end a program: a
    /// Ctrl-Z that reached keychain-cli's group (its output a pipe) stops the command, then it.
    var alsoPassedOn: [Int32] { job == nil ? [SIGTSTP] : [] }

    /// The command `child` started: with a group of its own, it gets the terminal's foreground if
    /// keychain-cli had it. Otherwise keychain-cli leaves the group the command stays in (a group
    /// signal between the two reaches both), and, now in the background, writes on what the
    /// command writes to the terminal even under `stty tostop` (SIGTTOU ignored: the command's
    /// own disposition was set when it started).
    func started(_ child: pid_t) {
        if job == nil {
            if atOnce { _ = giveTerminal(to: child) }
        } else {
            setpgid(0, 0)
            signal(SIGTTOU, SIG_IGN)
        }
    }

    /// The status of `child` once it has ended, reaping it; nil while it runs. A stop of the
    /// command at the terminal is answered as a shell would (above).
    func status(of child: pid_t) -> Int32? {
        var status: Int32 = 0
        let waited = waitpid(child, &status, WNOHANG | (terminal >= 0 ? WUNTRACED : 0))
        guard waited == child else { return nil }
        guard status & 0xff == 0x7f else { return status }  // (WIFSTOPPED)
        let signal = (status >> 8) & 0xff
        guard [SIGTSTP, SIGTTIN, SIGTTOU].contains(signal) else { return nil }  // a SIGSTOP's sender continues it
        if let job {
            // Stopped with the job: so is keychain-cli, in the job's group, until the job is continued.
            guard setpgid(0, job) == 0 else { return nil }
            kill(getpid(), SIGSTOP)
            setpgid(0, 0)
            return nil
        }
        // At the terminal before keychain-cli gave it the foreground (it started reading at once):
        // the foreground now, or already (given between its read and this wait: the stop came
        // before it). Else the stop is the job's: keychain-cli stops too, as the shell above
        // expects, with SIGSTOP (never discarded, as SIGTSTP is in an orphaned group).
        if signal != SIGTSTP && terminal >= 0 && tcgetpgrp(terminal) == child {
            kill(-child, SIGCONT)
            return nil
        }
        if signal == SIGTSTP || !giveTerminal(to: child) {
            takeTerminal(from: child)
            kill(getpid(), SIGSTOP)
            if atOnce { _ = giveTerminal(to: child) }
        }
        kill(-child, SIGCONT)
        return nil
    }

    /// The process group of a command started again (exec --restart-on-change): the job's, where
    /// the first one stayed (keychain-cli has left it), or one of its own.
    var restartGroup: pid_t { job ?? 0 }

    /// The command `child` started again in place of `old` (ended): the terminal's foreground
    /// passes from the one to the other, where the first one got it.
    func restarted(_ child: pid_t, after old: pid_t) {
        guard job == nil else { return }
        if takeTerminal(from: old) && atOnce { _ = giveTerminal(to: child) }
    }

    /// Before keychain-cli ends: the terminal's foreground back to its group, if the command's has
    /// it (and the group continued, for a reader of its output stopped meanwhile).
    func finished(_ child: pid_t) {
        if takeTerminal(from: child) && !atOnce { kill(0, SIGCONT) }
        if terminal >= 0 { close(terminal) }
    }

    /// Whether the command's group has the terminal's foreground now: given when keychain-cli had it.
    private func giveTerminal(to child: pid_t) -> Bool {
        guard terminal >= 0, job == nil, tcgetpgrp(terminal) == getpgrp() else { return false }
        return tcsetpgrp(terminal, child) == 0
    }

    /// (SIGTTOU blocked: a process of a background group may then set the foreground.)
    @discardableResult private func takeTerminal(from child: pid_t) -> Bool {
        guard terminal >= 0, job == nil, tcgetpgrp(terminal) == child else { return false }
        var only = sigset_t()
        var previous = sigset_t()
        sigemptyset(&only)
        sigaddset(&only, SIGTTOU)
        sigprocmask(SIG_BLOCK, &only, &previous)
        let taken = tcsetpgrp(terminal, getpgrp()) == 0
        sigprocmask(SIG_SETMASK, &previous, nil)
        return taken
    }
}
