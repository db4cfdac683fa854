#ifndef KEYCHAIN_CLI_LINUX_REMOVER_H
#define KEYCHAIN_CLI_LINUX_REMOVER_H

// The private directories of exec --file and edit, and their remover
// (keychain-cli/System/PrivateMemoryDirectory.swift).
// Included by shim.h, which includes the system headers.

#include <sys/stat.h>

// O_PATH is declared under _GNU_SOURCE only; its value on x86_64, arm64 and asm-generic.
#ifndef O_PATH
#define O_PATH 010000000
#endif

// One directory on the way down: what it is (to know "..", coming back, leads to it and not to
// where the directory was moved meanwhile), where its parent's listing goes on after it, and its
// name there (to remove it once empty).
struct keychain_cli_level {
    dev_t device;
    ino_t inode;
    off_t resume;
    char name[256];
};

// The most directories kept on the way down (a reserve of address space, touched as used): a
// tree deeper than this is removed down to this depth.
#define KEYCHAIN_CLI_REMOVER_DEPTH (1 << 18)
// The most entries one call looks at: a process that keeps filling the tree meanwhile cannot keep
// the remover at work for ever.
#define KEYCHAIN_CLI_REMOVER_BUDGET (1L << 23)

// "/proc/self/fd/N" for `fd`: to change the mode of a directory opened only as a path (O_PATH),
// which fchmod does not take.
static inline void keychain_cli_fd_path(int fd, char path[32]) {
    static const char head[] = "/proc/self/fd/";
    char digits[12];
    int count = 0;
    do digits[count++] = (char)('0' + fd % 10);
    while ((fd /= 10) > 0 && count < 11);
    unsigned at = 0;
    for (; head[at]; at++) path[at] = head[at];
    while (count > 0) path[at++] = digits[--count];
    path[at] = 0;
}

// The directory `name` in `parent`, opened for reading without following a symlink, made
// readable, writable and searchable by its owner first where it was not (chmod u+rwx: a
// read-only directory of an unpacked archive or of Go's module cache, a directory of mode 000),
// on the mount `mount` only. -1 when it is not such a directory (any longer).
static inline int keychain_cli_open_inner(int parent, const char *name, const struct stat *mount) {
    int inner = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (inner < 0 && errno == EACCES) {  // not readable (mode 000): made so through a path descriptor
        int path = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        if (path < 0) return -1;
        struct stat info;
        char link[32];
        keychain_cli_fd_path(path, link);
        if (fstat(path, &info) == 0 && info.st_dev == mount->st_dev && chmod(link, (info.st_mode & 07777) | 0700) == 0)
            inner = open(link, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
        close(path);
    }
    struct stat opened;
    if (inner >= 0 && (fstat(inner, &opened) != 0 || opened.st_dev != mount->st_dev)) {
        close(inner);
        return -1;
    }
    if (inner >= 0 && (opened.st_mode & 0700) != 0700) fchmod(inner, (opened.st_mode & 07777) | 0700);
    return inner;
}

// Removes everything in the open directory `handle`: files, symlinks (never followed), FIFOs, and
// directories with all they hold, at any depth, without recursion, through descriptors (a path
// swapped meanwhile leads nowhere; coming back up through "..", a directory moved out of the tree
// sends the pass back to `handle`). A directory of ours that is not u+rwx is made so first; one
// on another mount (a bind mount inside) is left. A pass goes through the tree once; passes go on
// while one removes something, 64 at most, and KEYCHAIN_CLI_REMOVER_BUDGET entries in all.
// Only system calls (the remover calls it after fork).
static inline void keychain_cli_empty_directory(int handle) {
    struct entry {
        uint64_t inode;
        int64_t offset;
        unsigned short length;
        unsigned char type;
        char name[];
    };
    struct stat top;
    if (fstat(handle, &top) != 0) return;
    if ((top.st_mode & 0700) != 0700) fchmod(handle, (top.st_mode & 07777) | 0700);
    size_t size = sizeof(struct keychain_cli_level) * KEYCHAIN_CLI_REMOVER_DEPTH;
    struct keychain_cli_level *levels = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (levels == MAP_FAILED) return;
    levels[0].device = top.st_dev;
    levels[0].inode = top.st_ino;
    char buffer[4096];
    long budget = KEYCHAIN_CLI_REMOVER_BUDGET;
    for (int pass = 0; pass < 64 && budget > 0; pass++) {
        long removed = 0;
        int depth = 0;
        int current = fcntl(handle, F_DUPFD_CLOEXEC, 3);
        if (current < 0) break;
        lseek(current, 0, SEEK_SET);
        while (current >= 0 && budget > 0) {
            long count = syscall(SYS_getdents64, current, buffer, sizeof buffer);
            int inner = -1;
            for (long at = 0; count > 0 && at < count && budget > 0; budget--) {
                struct entry *entry = (struct entry *)(buffer + at);
                at += entry->length;
                const char *name = entry->name;
                if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
                if (unlinkat(current, name, 0) == 0 || unlinkat(current, name, AT_REMOVEDIR) == 0) {
                    removed++;
                    continue;
                }
                if ((errno != ENOTEMPTY && errno != EEXIST) || depth + 1 >= KEYCHAIN_CLI_REMOVER_DEPTH) continue;
                inner = keychain_cli_open_inner(current, name, &top);
                if (inner < 0) continue;
                struct keychain_cli_level *level = &levels[depth + 1];
                struct stat info;
                fstat(inner, &info);
                level->device = info.st_dev;
                level->inode = info.st_ino;
                level->resume = (off_t)entry->offset;
                unsigned i = 0;
                for (; name[i] && i < sizeof level->name - 1; i++) level->name[i] = name[i];
                level->name[i] = 0;
                break;
            }
            if (inner >= 0) {  // down
                close(current);
                current = inner;
                depth++;
                continue;
            }
            if (count > 0) continue;
            if (depth == 0) break;  // the whole tree, once
            // Up: ".." must be the directory that was there on the way down.
            int parent = openat(current, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat info;
            close(current);
            current = -1;
            if (parent < 0) break;
            if (fstat(parent, &info) != 0 || info.st_dev != levels[depth - 1].device ||
                info.st_ino != levels[depth - 1].inode) {
                close(parent);
                removed++;  // (moved meanwhile: the pass starts again at the top)
                break;
            }
            if (unlinkat(parent, levels[depth].name, AT_REMOVEDIR) == 0) removed++;
            lseek(parent, levels[depth].resume, SEEK_SET);
            current = parent;
            depth--;
        }
        if (current >= 0) close(current);
        if (!removed) break;
    }
    munmap(levels, size);
}

// Removes the emptied directory open as `handle`: at `directory`, or wherever the command renamed
// it to (its path now, from /proc/self/fd), checked to be the same directory; a process left
// behind then writes into it no more. Only system calls.
static inline void keychain_cli_remove_emptied(int handle, const char *directory) {
    struct stat open, named;
    if (fstat(handle, &open) != 0) return;
    if (lstat(directory, &named) == 0 && named.st_dev == open.st_dev && named.st_ino == open.st_ino) {
        rmdir(directory);
        return;
    }
    char link[32], path[4096];
    keychain_cli_fd_path(handle, link);
    ssize_t count = readlink(link, path, sizeof path - 1);
    if (count <= 1 || path[0] != '/') return;
    path[count] = 0;
    if (lstat(path, &named) == 0 && named.st_dev == open.st_dev && named.st_ino == open.st_ino) {
        keychain_cli_empty_directory(handle);
        rmdir(path);
    }
}

// Starts the remover of `exec --file`'s directory: a fork that holds only `handle` (the directory,
// open, with the flock that tells a later exec --file it is looked after), leaves the terminal's
// session, ignores the signals that end a program, and waits until this process has ended
// (PR_SET_PDEATHSIG, which exec keeps: after exec that is the command), even by SIGKILL; then it
// removes all the directory holds (the command may have added files), and the directory. Call it
// from the main thread: the kernel sends the signal when the thread that forked ends. Only system
// calls between fork and _exit. Returns the pid, or -1 with errno.
static inline int keychain_cli_spawn_remover(const char *directory, int handle) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    struct sigaction ignore = {0};
    ignore.sa_handler = SIG_IGN;
    int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR2};
    for (unsigned i = 0; i < sizeof ignored / sizeof ignored[0]; i++) sigaction(ignored[i], &ignore, NULL);
    sigset_t wait;
    sigemptyset(&wait);
    sigaddset(&wait, SIGUSR1);
    sigprocmask(SIG_SETMASK, &wait, NULL);
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGUSR1, 0, 0, 0);
    if (handle != 0 && dup2(handle, 0) != 0) _exit(127);  // the same open directory: its lock too
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 1, ~0U, 0) != 0)
#endif
    {
        for (int fd = 1; fd < 4096; fd++) close(fd);
    }
    while (getppid() == parent) sigwaitinfo(&wait, NULL);  // a stray SIGUSR1 while it lives is not its end
    keychain_cli_empty_directory(0);
    keychain_cli_remove_emptied(0, directory);
    _exit(0);
}

#endif
