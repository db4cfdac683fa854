import CLinux
import Glibc
import KeychainCore

/// What the process does before anything else, so that no secret it will hold leaks and no
/// descriptor it opens lands where a caller expects standard input or output.
enum Startup {
    /// The core file size limit keychain-cli was started with, given back to `exec`'s command.
    nonisolated(unsafe) private static var inheritedCoreLimit = rlimit()
    /// The steps of ``harden()`` that failed, told by a process that holds secrets for long.
    nonisolated(unsafe) private static var failures: [String] = []

    /// Called first thing in `main`, before any file or D-Bus connection is opened.
    static func harden() {
        reserveStandardDescriptors()
        // No core file and no ptrace by other processes of this user: a secret, or
        // $KEYCHAIN_PASSPHRASE, never reaches a core dump (ssh-agent and gpg-agent do the same).
        if keychain_cli_set_undumpable() != 0 {
            failures.append(
                "it cannot make itself undumpable (\(String(cString: strerror(errno)))): another process of yours "
                    + "may trace it; run it where prctl is allowed")
        }
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &inheritedCoreLimit)
        var none = rlimit(rlim_cur: 0, rlim_max: inheritedCoreLimit.rlim_max)
        if setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) != 0 {
            failures.append(
                "it cannot set its core size limit to 0 (\(String(cString: strerror(errno)))); run it with ulimit -c 0")
        }
        // A closed pipe on stdout is an error of write() (EPIPE), handled by writeOutput, on every
        // backend alike: GDBus ignores SIGPIPE for the whole process, the vault would be killed by it.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Undoes what `exec`'s command must not inherit (it gets the caller's core limit back; execve
    /// itself makes the process dumpable again).
    static func restoreForExec() {
        setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &inheritedCoreLimit)
    }

    /// Gives a spawned command (`serve -- COMMAND`) the core limit, and the core dump filter,
    /// keychain-cli was started with.
    static func restoreCoreLimit(of pid: pid_t) {
        _ = keychain_cli_set_core_limit(pid, &inheritedCoreLimit)
        if let inheritedDumpFilter { _ = writeFile("/proc/\(pid)/coredump_filter", inheritedDumpFilter) }
    }

    /// The core dump filter keychain-cli was started with, once ``holdSecretsSafely()`` cleared it.
    nonisolated(unsafe) private static var inheritedDumpFilter: String?

    /// For a process that holds secrets for long (`serve`, the holder): its memory locked against
    /// swap, as its pages are touched (mlockall), and left out of any core dump even where the
    /// system writes one of a non-dumpable process (`/proc/self/coredump_filter` 0: no mapping
    /// is dumped). Locking needs RLIMIT_MEMLOCK unlimited, or root: with a limit, a lock that later
    /// allocations outgrow would make them fail, so it is not tried.
    /// - Returns: a line for each step that failed, to show once (serve writes them on stderr,
    ///   the holder gives them to `unlock`).
    static func holdSecretsSafely(_ command: String) -> [String] {
        var failed = failures
        // Read as hexadecimal digits; written back with 0x, which the kernel's parser needs (a
        // leading 0 alone would read as octal).
        if let digits = dumpFilter(), let value = UInt32(digits, radix: 16) {
            inheritedDumpFilter = "0x" + String(value, radix: 16)
        }
        let keepOut = "; run it where /proc is mounted, or keep core dumps off (ulimit -c 0, and a core_pattern "
        if !clearDumpFilter() {
            failed.append(
                "its memory may go into a core dump: its core dump filter cannot be cleared "
                    + "(\(String(cString: strerror(errno))))" + keepOut + "that is no pipe)")
        }
        let limit = keychain_cli_memlock_limit()
        let swap = "; run it with ulimit -l unlimited, or LimitMEMLOCK=infinity in its systemd unit"
        if limit == -1 || geteuid() == 0 {
            if keychain_cli_lock_memory() != 0 {
                failed.append("its memory is not locked against swap (\(String(cString: strerror(errno))))" + swap)
            }
        } else {
            failed.append(
                "its memory is not locked against swap (RLIMIT_MEMLOCK is \(limit / 1024) KiB, not unlimited)" + swap)
        }
        return failed.map { "keychain-cli: \(command) holds secrets, but \($0)\n" }
    }

    /// Writes 0 to `/proc/self/coredump_filter` and reads it back. While the process is not
    /// dumpable its /proc files belong to root, and a plain user cannot write it: the process is
    /// dumpable for the moment it writes (it holds no secret yet), then not again, and a tracer
    /// that attached in that moment ends it.
    private static func clearDumpFilter() -> Bool {
        let undumpable = keychain_cli_is_dumpable() == 0
        if undumpable && geteuid() != 0 { _ = keychain_cli_set_dumpable() }
        let written = writeFile("/proc/self/coredump_filter", "0")
        let error = errno
        if undumpable && geteuid() != 0 {
            _ = keychain_cli_set_undumpable()
            if tracer() != 0 {
                writeError(
                    "keychain-cli: a debugger attached itself while it started; it holds nothing yet, and stops\n")
                exit(70)
            }
        }
        let back = dumpFilter()
        errno = error
        return written && back.map { !$0.isEmpty && $0.allSatisfy { $0 == "0" } } == true
    }

    /// This process's core dump filter as /proc shows it (hexadecimal digits), nil when unread.
    private static func dumpFilter() -> Substring? {
        guard let bytes = try? readFileIfPresent("/proc/self/coredump_filter", limit: 64) else { return nil }
        return String(decoding: bytes, as: UTF8.self).trimming()
    }

    /// The process tracing this one (`TracerPid` of /proc/self/status), 0 for none.
    private static func tracer() -> Int {
        guard let status = try? readFileIfPresent("/proc/self/status", limit: 1 << 16) else { return 0 }
        let line = String(decoding: status, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("TracerPid:") }
        return line.flatMap { Int($0.dropFirst(10).trimming()) } ?? 0
    }

    /// Writes `text` to the file at `path` (a /proc setting); whether it was written whole.
    private static func writeFile(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        return write(fd, bytes, bytes.count) == bytes.count
    }

    /// Opens /dev/null on whichever of descriptors 0, 1 and 2 the caller left closed, so that the
    /// next file or socket opened (GLib's eventfd, a D-Bus connection) cannot take its number and
    /// receive what is written to stdout. It is opened for the other direction, so that using it
    /// still fails as a closed descriptor would (`get >&-` exits 74, not 0 with the secret lost).
    private static func reserveStandardDescriptors() {
        for fd in Int32(0)...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let reserved = open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY)
            if reserved >= 0 && reserved != fd {
                dup2(reserved, fd)
                close(reserved)
            }
        }
    }

    /// Refuses an argument that is not valid UTF-8 (before `--`, after which `exec`'s command
    /// takes its arguments byte for byte): Swift would turn each bad byte into U+FFFD, so that
    /// `a\xfeb` and `a\xffb` would name the same key.
    static func checkArgumentsAreText() throws {
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = CommandLine.unsafeArgv[index] else { break }
            if strcmp(argument, "--") == 0 { return }
            if String(validatingCString: argument) == nil {
                throw CommandFailure.usage(
                    "argument \(index) is not valid UTF-8 text. Names and options are UTF-8; "
                        + "convert it first (iconv), or set it from a UTF-8 file")
            }
        }
    }

    /// The arguments after the first `--`, exactly as the caller passed them (for `exec`).
    static func argumentsAfterTerminator() -> [UnsafeMutablePointer<CChar>?]? {
        let all = (0..<Int(CommandLine.argc)).map { CommandLine.unsafeArgv[$0] }
        guard let terminator = all.firstIndex(where: { $0.map { strcmp($0, "--") == 0 } ?? false }) else {
            return nil
        }
        return Array(all[(terminator + 1)...])
    }
}

/// The SIGPIPE disposition keychain-cli was started with. GDBus sets SIGPIPE to ignored for the
/// whole process, and an ignored signal stays ignored across exec: `exec` gives the command what
/// keychain-cli received (usually the default; else `yes | head` in the command never ends).
enum InheritedSignals {
    nonisolated(unsafe) private static var sigpipe = sigaction()

    /// Called first thing in main, before any D-Bus connection.
    static func record() {
        sigaction(SIGPIPE, nil, &sigpipe)
    }

    static func restore() {
        sigaction(SIGPIPE, &sigpipe, nil)
    }

    /// Whether SIGPIPE had its default action (what a spawned command gets back).
    static var sigpipeWasDefault: Bool { sigpipe.__sigaction_handler.sa_handler == nil }
}
