#ifndef KEYCHAIN_CLI_LINUX_SHIM_H
#define KEYCHAIN_CLI_LINUX_SHIM_H

// Linux calls Swift cannot make directly: prctl and open with a mode are variadic, and O_TMPFILE
// is a macro built from others, which Swift does not import.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/vfs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

// glibc defines O_TMPFILE only under _GNU_SOURCE, which the Swift module of glibc is not built
// with; this is its value on x86_64, arm64 and the other architectures of asm-generic.
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif

// prctl(PR_SET_DUMPABLE, 0): no core file, and no ptrace by other processes of the same user
// (what ssh-agent and gpg-agent do). execve of another program makes it dumpable again.
static inline int keychain_cli_set_undumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
// prctl(PR_SET_DUMPABLE, 1): for the moment a plain user's process writes its own /proc files,
// which belong to root while it is not dumpable.
static inline int keychain_cli_set_dumpable(void) { return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }

// prctl(PR_SET_PDEATHSIG): `signal` when the parent ends (kept across exec): a clipboard tool
// dies with the process that would have cleared the clipboard.
static inline int keychain_cli_set_parent_death_signal(int signal) { return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0); }

// mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT): every page of the process, now and later,
// locked against swap as it is first touched (ONFAULT: without faulting in the whole binary's
// mapping at once). MCL_ONFAULT (Linux 4.4) is not in every libc's headers.
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif
static inline int keychain_cli_lock_memory(void) { return mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT); }

// getrlimit(RLIMIT_MEMLOCK)'s soft limit in bytes, -1 when unlimited: glibc's Swift module names
// the resource only under _GNU_SOURCE.
static inline long long keychain_cli_memlock_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return 0;
    return limit.rlim_cur == RLIM_INFINITY ? -1 : (long long)limit.rlim_cur;
}

// prctl(PR_GET_DUMPABLE), for tests.
static inline int keychain_cli_is_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

// An unnamed file in `directory`, created 0600, that no interruption can leave behind: it gets a
// name only by linkat. -1 with errno EOPNOTSUPP (or EISDIR on old kernels) where the file system
// has no O_TMPFILE.
static inline int keychain_cli_open_unnamed(const char *directory) {
    return open(directory, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
}

// prlimit(pid, RLIMIT_CORE, limit, NULL), declared by glibc only under _GNU_SOURCE: gives a
// spawned command (serve -- COMMAND) the core limit keychain-cli was started with.
static inline int keychain_cli_set_core_limit(int pid, const struct rlimit *limit) {
    return (int)syscall(SYS_prlimit64, pid, RLIMIT_CORE, limit, NULL);
}

// Starts the program at `path` with `argv`, `print_fd` as its descriptor 3, /dev/null on 0, 1 and
// 2, no other descriptor (a caller's inherited ones, which would keep its pipes open) and no
// blocked signal. `serve -- COMMAND`'s dbus-daemon (detached 0) gets SIGTERM when this process
// dies, even by SIGKILL (PR_SET_PDEATHSIG): a bus nobody serves must not outlive serve. `unlock`'s
// holder (detached 1) outlives it, in a session of its own (setsid): no terminal's hangup or ^C
// reaches it. `ssh-agent -D` and `-- COMMAND`'s agent (detached 2) has both: a session of its own,
// and SIGTERM when the keychain-cli that started it (or the command it became) ends. Only system
// calls between fork and exec. Returns the pid, or -1 with errno.
static inline int keychain_cli_spawn_service(const char *path, char *const argv[], char *const envp[], int print_fd,
                                             int detached) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (detached) {
        if (setsid() < 0) _exit(127);
    }
    if (detached != 1) {
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (getppid() != parent) _exit(127);
    }
    if (print_fd != 3 && dup2(print_fd, 3) != 3) _exit(127);
    fcntl(3, F_SETFD, 0);
    int null = open("/dev/null", O_RDWR);
    if (null < 0) _exit(127);
    dup2(null, 0);
    dup2(null, 1);
    // (The agent of ssh-agent -D or -- COMMAND says what it does where its starter would.)
    if (detached != 2) dup2(null, 2);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4, ~0U, 0) != 0)
#endif
    {
        for (int fd = 4; fd < 4096; fd++) close(fd);
    }
    execve(path, argv, envp);
    _exit(127);
}

// A record of getdents64(2), as the kernel writes it.
struct keychain_cli_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

// Starts the guardian of `serve -- COMMAND`'s private bus: a fork that runs no other program and
// holds only `lifeline`, the read end of a pipe whose write end only serve holds. The guardian
// makes the bus's directory itself (mkdtemp of `directory_template`, ending XXXXXX) and writes its
// name, then a newline, on `report` (nothing when it cannot: it ends with errno as its status), so
// that no moment exists when the directory is there and no guardian is: a SIGKILL to serve before
// the fork leaves nothing, after it the guardian removes the directory. serve writes 'p' and the
// command's pid (an int) once the command runs, and 'x' when it has stopped everything itself. End
// of file without 'x' means serve ended otherwise, even by SIGKILL (the kernel closes its end): the
// guardian then sends the command SIGTERM, SIGKILL `grace_ms` later if it is still there (through a
// pidfd opened when told the pid: no other process can take its place), and removes what the
// directory holds (the socket; `bus.conf` until dbus-daemon has read it: a SIGKILL while the
// daemon started left the directory) and the directory. A command is never left running without its bus,
// and no directory is left behind. Only system calls (and mkdtemp, strlen, memcpy) between fork and
// _exit. Returns the pid, or -1 with errno.
static inline int keychain_cli_spawn_guardian(int lifeline, int report, const char *directory_template,
                                              int grace_ms) {
    char directory[4096];
    size_t length = strlen(directory_template);
    if (length + 5 > sizeof directory) {
        errno = ENAMETOOLONG;
        return -1;
    }
    pid_t pid = fork();
    if (pid != 0) return pid;
    memcpy(directory, directory_template, length + 1);
    struct sigaction ignore = {0};
    ignore.sa_handler = SIG_IGN;
    int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU};
    for (unsigned i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &ignore, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int line = fcntl(lifeline, F_DUPFD, 10);
    int told = fcntl(report, F_DUPFD, 10);
    int null = open("/dev/null", O_RDWR);
    if (line < 0 || told < 0 || null < 0) _exit(127);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    dup2(line, 3);
    dup2(told, 4);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 5, ~0U, 0) != 0)
#endif
    {
        for (int fd = 5; fd < 4096; fd++) close(fd);
    }
    if (mkdtemp(directory) == NULL) _exit(errno & 0xff ? errno & 0xff : 1);
    directory[length] = '\n';
    size_t written = 0;
    while (written <= length) {
        ssize_t count = write(4, directory + written, length + 1 - written);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        written += (size_t)count;
    }
    directory[length] = '\0';
    close(4);
    int command = 0, handle = -1;
    for (;;) {
        char kind;
        ssize_t count;
        do count = read(3, &kind, 1);
        while (count < 0 && errno == EINTR);
        if (count == 1 && kind == 'x') _exit(0);
        if (count != 1 || kind != 'p') break;
        int given;
        char *into = (char *)&given;
        size_t got = 0;
        while (got < sizeof given) {
            count = read(3, into + got, sizeof given - got);
            if (count < 0 && errno == EINTR) continue;
            if (count <= 0) break;
            got += (size_t)count;
        }
        if (got < sizeof given) break;
        command = given;
#ifdef SYS_pidfd_open
        handle = (int)syscall(SYS_pidfd_open, command, 0);
#endif
    }
    if (handle >= 0) {
#ifdef SYS_pidfd_send_signal
        syscall(SYS_pidfd_send_signal, handle, SIGTERM, NULL, 0);
        struct pollfd gone = {handle, POLLIN, 0};
        if (poll(&gone, 1, grace_ms) == 0) syscall(SYS_pidfd_send_signal, handle, SIGKILL, NULL, 0);
#endif
    } else if (command > 0) {
        kill(command, SIGTERM);
        struct timespec tick = {0, 50000000};
        for (int waited = 0; waited < grace_ms && kill(command, 0) == 0; waited += 50) nanosleep(&tick, NULL);
        if (kill(command, 0) == 0) kill(command, SIGKILL);
    }
    // Every file in the directory goes: the socket, the configuration (there until dbus-daemon has
    // read it), a file an atomic write was killed in. Read with getdents64: no allocation here.
    int entries = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (entries >= 0) {
        char buffer[4096] __attribute__((aligned(8)));
        long count;
        while ((count = syscall(SYS_getdents64, entries, buffer, sizeof buffer)) > 0) {
            for (long at = 0; at < count;) {
                struct keychain_cli_dirent64 *entry = (struct keychain_cli_dirent64 *)(buffer + at);
                const char *name = entry->d_name;
                if (!(name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0)))) {
                    unlinkat(entries, name, 0);
                }
                at += entry->d_reclen;
            }
        }
        close(entries);
    }
    rmdir(directory);
    _exit(0);
}

// Starts `file` (searched in PATH, as execvp does) with `argv` and this process's environment,
// `outputs` on descriptors 1, 2, … and the signals in `defaults` back to their default action, held:
// the child waits for one byte on `hold` before it runs anything, so that the caller can first do
// what must come before the command (serve tells its guardian the pid). End of file there instead
// (the caller ended first) ends the child unrun (_exit 127). A failed exec's errno is written on
// `report`; give both descriptors close-on-exec, so that the command keeps neither and `report`
// reads end of file once it runs. Only system calls between fork and _exit (and execvp, which
// glibc's posix_spawnp calls there too). Returns the pid, or -1 with errno.
static inline pid_t keychain_cli_spawn_held(const char *file, char *const argv[], const int *outputs, int count,
                                            const sigset_t *defaults, int hold, int report) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    struct sigaction standard = {0};
    standard.sa_handler = SIG_DFL;
    for (int number = 1; number < NSIG; number++) {
        if (sigismember(defaults, number) == 1) sigaction(number, &standard, NULL);
    }
    int error = 0;
    for (int index = 0; index < count && error == 0; index++) {
        if (dup2(outputs[index], index + 1) < 0) error = errno;
    }
    if (error == 0) {
        char go;
        ssize_t got;
        do got = read(hold, &go, 1);
        while (got < 0 && errno == EINTR);
        if (got != 1) _exit(127);
        execvp(file, argv);
        error = errno;
    }
    ssize_t written;
    do written = write(report, &error, sizeof error);
    while (written < 0 && errno == EINTR);
    _exit(127);
}

// The file system type of `path` (statfs's f_type: TMPFS_MAGIC…), or -1.
static inline long keychain_cli_file_system_type(const char *path) {
    struct statfs info;
    return statfs(path, &info) == 0 ? (long)info.f_type : -1;
}

// fcntl(F_SETPIPE_SZ), a GNU name: a pipe of `size` bytes, for fewer, larger reads.
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#endif
static inline int keychain_cli_set_pipe_size(int fd, int size) { return fcntl(fd, F_SETPIPE_SZ, size); }

// pipe2(O_CLOEXEC), declared by glibc only under _GNU_SOURCE: both ends close-on-exec from the
// start, so that no child process started meanwhile by another thread inherits them.
int pipe2(int pipefd[2], int flags);
static inline int keychain_cli_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

// The process and user at the other end of the Unix socket `fd` (SO_PEERCRED; glibc declares
// struct ucred only under _GNU_SOURCE): for a server, its client's; for a client, the uid that
// made the socket listen. 0, or -1 with errno.
// Blocks SIGTERM, SIGINT and SIGHUP in this thread (and the threads it starts after) and returns
// a descriptor that reads them (signalfd, close-on-exec, non-blocking): a server's poll then ends
// on them as on any event, and cleans up. -1 with errno when it cannot.
static inline int keychain_cli_ending_signals(void) {
    sigset_t ending;
    sigemptyset(&ending);
    sigaddset(&ending, SIGTERM);
    sigaddset(&ending, SIGINT);
    sigaddset(&ending, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &ending, NULL) != 0) return -1;
    return signalfd(-1, &ending, SFD_CLOEXEC | SFD_NONBLOCK);
}

struct keychain_cli_peer { int pid; unsigned uid; unsigned gid; };
static inline int keychain_cli_peer_credentials(int fd, struct keychain_cli_peer *peer) {
    socklen_t length = sizeof(*peer);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, peer, &length);
}

#include "relay.h"
#include "remover.h"

#endif
