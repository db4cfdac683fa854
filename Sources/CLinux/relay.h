#ifndef KEYCHAIN_CLI_LINUX_RELAY_H
#define KEYCHAIN_CLI_LINUX_RELAY_H

// exec's and serve's masked output (keychain-cli/System/MaskedOutput.swift, the only caller: the
// state below is static, one copy per object file that uses it). Included by shim.h, which
// includes the system headers.

struct keychain_cli_relay {
    volatile sig_atomic_t child;    // the command, once started
    volatile sig_atomic_t leads;    // whether it leads a process group of its own
    volatile sig_atomic_t pending;  // signals that came before the command started (bit n: signal n)
    volatile sig_atomic_t ending;   // the last SIGINT, SIGTERM, SIGHUP or SIGQUIT passed on (exec's restarts)
    int wake;                       // a pipe's write end (non-blocking): a byte for each SIGCHLD
    int terminal[2];                // our terminal outputs, whose sizes the ptys follow (or -1)
    int pty[2];                     // the ptys' masters (or -1)
};

static inline struct keychain_cli_relay *keychain_cli_relay_state(void) {
    static struct keychain_cli_relay state = {0, 0, 0, 0, -1, {-1, -1}, {-1, -1}};
    return &state;
}

// The ptys take their terminals' sizes; the command gets SIGWINCH when one changed, or `always`.
// (The terminal signals a change of size to its foreground group, which is often the command's
// and not ours: MaskedOutput.swift also asks every half second.)
static inline void keychain_cli_relay_follow_sizes(int always) {
    struct keychain_cli_relay *relay = keychain_cli_relay_state();
    int changed = 0;
    struct winsize size, current;
    for (int i = 0; i < 2; i++) {
        if (relay->pty[i] < 0 || ioctl(relay->terminal[i], TIOCGWINSZ, &size) != 0) continue;
        if (ioctl(relay->pty[i], TIOCGWINSZ, &current) == 0 && current.ws_row == size.ws_row &&
            current.ws_col == size.ws_col && current.ws_xpixel == size.ws_xpixel && current.ws_ypixel == size.ws_ypixel)
            continue;
        ioctl(relay->pty[i], TIOCSWINSZ, &size);
        changed = 1;
    }
    if ((always || changed) && relay->child > 0) kill(relay->child, SIGWINCH);
}

static inline void keychain_cli_relay_handler(int signal, siginfo_t *info, void *context) {
    (void)context;
    int saved = errno;
    struct keychain_cli_relay *relay = keychain_cli_relay_state();
    pid_t child = relay->child;
    if (signal == SIGCHLD) {
        char byte = 0;
        ssize_t ignored = write(relay->wake, &byte, 1);
        (void)ignored;
    } else if (signal == SIGWINCH) {
        keychain_cli_relay_follow_sizes(1);
    } else if (!(child > 0 && info->si_code <= 0 && info->si_pid == child)) {
        // The command is never in our process group (JobControl.swift): what reaches us, from a
        // process or from a terminal (its Ctrl-C while we have its foreground, its hangup to us as
        // the session's leader), did not reach it, and is passed on once: a terminal's (SI_KERNEL)
        // to its whole group, as the terminal gives it. Not what it sent us itself.
        if (signal == SIGINT || signal == SIGTERM || signal == SIGHUP || signal == SIGQUIT) relay->ending = signal;
        if (child > 0) kill(relay->leads && info->si_code == SI_KERNEL ? -child : child, signal);
        else relay->pending |= 1 << signal;
    }
    errno = saved;
}

// Catches `signals`, SIGWINCH, and SIGCHLD when there is a `wake` (not with serve, whose GLib loop
// watches its child), with the handler above, SA_RESTART. `terminals` and `ptys`: two each (-1:
// none), the pty that follows each terminal's size.
static inline int keychain_cli_relay_start(int wake, const int *terminals, const int *ptys, const int *signals,
                                           int count) {
    struct keychain_cli_relay *relay = keychain_cli_relay_state();
    relay->wake = wake;
    for (int i = 0; i < 2; i++) {
        relay->terminal[i] = terminals[i];
        relay->pty[i] = ptys[i];
    }
    struct sigaction action = {0};
    action.sa_sigaction = keychain_cli_relay_handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&action.sa_mask);
    if ((wake >= 0 && sigaction(SIGCHLD, &action, NULL) != 0) || sigaction(SIGWINCH, &action, NULL) != 0) return -1;
    for (int i = 0; i < count; i++)
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    return 0;
}

// The command started (`leads`: a process group of its own): signals are passed on to it from
// now, and those that came before, now.
static inline void keychain_cli_relay_set_child(int child, int leads) {
    struct keychain_cli_relay *relay = keychain_cli_relay_state();
    sigset_t all, previous;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &previous);
    relay->child = child;
    relay->leads = leads;
    for (int signal = 1; signal < 32; signal++)
        if (relay->pending & (1 << signal)) kill(child, signal);
    relay->pending = 0;
    sigprocmask(SIG_SETMASK, &previous, NULL);
}

// The last ending signal passed on (or held for the next command) since the last call, or 0:
// exec --restart-on-change starts no new command after one.
static inline int keychain_cli_relay_take_ending(void) {
    struct keychain_cli_relay *relay = keychain_cli_relay_state();
    sigset_t all, previous;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &previous);
    int signal = relay->ending;
    relay->ending = 0;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    return signal;
}

// A pty whose slave has the settings and window size of terminal `like`, but no output
// processing (what the command writes reaches `like` as written, which then does its own).
// Both ends close-on-exec, neither a controlling terminal. 0, or -1 with errno.
static inline int keychain_cli_open_pty(int like, int *master, int *slave) {
    int primary = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (primary < 0) return -1;
    int secondary = -1;
    if (grantpt(primary) == 0 && unlockpt(primary) == 0) {
#ifdef TIOCGPTPEER
        secondary = ioctl(primary, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
#endif
        if (secondary < 0) {
            char *name = ptsname(primary);
            if (name) secondary = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        }
    }
    if (secondary < 0) {
        int saved = errno;
        close(primary);
        errno = saved;
        return -1;
    }
    struct termios settings;
    if (tcgetattr(like, &settings) == 0) {
        settings.c_oflag &= ~(tcflag_t)OPOST;
        tcsetattr(secondary, TCSANOW, &settings);
    }
    struct winsize size;
    if (ioctl(like, TIOCGWINSZ, &size) == 0) ioctl(secondary, TIOCSWINSZ, &size);
    *master = primary;
    *slave = secondary;
    return 0;
}

#endif
