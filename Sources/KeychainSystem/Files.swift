import Glibc

// The POSIX file calls of the vault and of the CLI's output files, in one place.

/// A file operation that failed: what was attempted, on which path, and the C error.
package struct FileError: Error, CustomStringConvertible {
    /// What was attempted, naming the path: `cannot write '/x/vault.age'`.
    package var operation: String
    /// The `errno` it failed with.
    package var code: Int32

    package init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    package var description: String { "\(operation) (\(String(cString: strerror(code))))" }
}

/// Writes all of `buffer` to `fd`, retrying short writes and EINTR; false on any other error.
package func writeAll(_ fd: Int32, _ buffer: UnsafeBufferPointer<UInt8>) -> Bool {
    var offset = 0
    while offset < buffer.count {
        let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}

/// The directory part of `path` ("." when it has none) and the file name.
package func splitPath(_ path: String) -> (directory: String, name: String) {
    guard let slash = path.lastIndex(of: "/") else { return (".", path) }
    let directory = slash == path.startIndex ? "/" : String(path[..<slash])
    return (directory, String(path[path.index(after: slash)...]))
}

/// Reads `fd` to its end, refusing more than `limit` bytes (nothing is ever silently truncated).
/// - Returns: nil when there are more than `limit` bytes.
/// - Throws: ``FileError`` with `operation` when a read fails (EINTR is retried).
package func readToEnd(_ fd: Int32, limit: Int, operation: @autoclosure () -> String) throws(FileError) -> [UInt8]? {
    var bytes: [UInt8] = []
    // A regular file's size is known: one buffer of that size, not a doubling series of copies
    // (a 2 MiB vault peaked at 4 MiB of them).
    var info = stat()
    if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 {
        bytes.reserveCapacity(min(Int(info.st_size), limit) + 1)
    }
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { throw FileError(operation()) }
        if count == 0 { return bytes }
        bytes += chunk[0..<count]
        if bytes.count > limit { return nil }
    }
}

/// The contents of the file at `path`, or nil when it does not exist.
/// - Parameter regular: whether it must be a regular file: a FIFO or a device there is refused
///   at once (`EINVAL`) instead of blocking the open or the read until another process writes.
/// - Throws: ``FileError`` when it cannot be read, or is larger than `limit` bytes (`EFBIG`).
package func readFileIfPresent(_ path: String, limit: Int, regular: Bool = false) throws(FileError) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC | (regular ? O_NONBLOCK : 0))
    if fd < 0 && errno == ENOENT { return nil }
    guard fd >= 0 else { throw FileError("cannot open \(quotedPath(path))") }
    defer { close(fd) }
    if regular {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError("cannot read \(quotedPath(path))") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            guard info.st_mode & S_IFMT != S_IFDIR else {
                throw FileError("cannot read \(quotedPath(path))", code: EISDIR)
            }
            throw FileError(
                "cannot read \(quotedPath(path)): a FIFO, a socket or a device, not a regular file", code: EINVAL)
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    }
    guard let bytes = try readToEnd(fd, limit: limit, operation: "cannot read \(quotedPath(path))") else {
        throw FileError("\(quotedPath(path)) is larger than \(limit) bytes", code: EFBIG)
    }
    return bytes
}

/// The program (the last path element of its first argument) and the arguments of process `pid`,
/// from /proc/PID/cmdline; nil when they cannot be read (it is gone, or is a kernel thread).
package func processCommand(_ pid: UInt32) -> (program: String, arguments: [String])? {
    let arguments =
        ((try? readFileIfPresent("/proc/\(pid)/cmdline", limit: 4096)) ?? nil)?
        .split(separator: 0).map { String(decoding: $0, as: UTF8.self) } ?? []
    guard let program = arguments.first?.split(separator: "/").last.map(String.init) else { return nil }
    return (program, arguments)
}

/// What tells one version of a file from another without reading it: its device, inode, size and
/// change times (nanoseconds). A writer that renames a new file over it gives a new inode; one
/// that writes in place, new times.
package struct FileStamp: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: [Int]
    let changed: [Int]

    /// The stamp of the file at `path` (links followed), or nil when it cannot be had.
    package init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = [info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
        changed = [info.st_ctim.tv_sec, info.st_ctim.tv_nsec]
    }
}

/// `path` with the symbolic links at its end followed (40 at most, as the kernel allows), even to
/// a target that does not exist yet, so that writing to the result leaves the links in place.
package func followingSymbolicLinks(_ path: String) -> String {
    var current = path
    for _ in 0..<40 {
        guard let target = linkTarget(current) else { return current }
        current = target
    }
    return current
}

/// Where the symbolic link at `path` points, a relative target taken from the link's directory;
/// nil when `path` is not a link.
package func linkTarget(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink(path, &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return target.hasPrefix("/") ? target : "\(splitPath(path).directory)/\(target)"
}

/// Creates `path` and any missing parents with mode 0700 (existing ones are left as they are).
package func makeDirectories(_ path: String) throws(FileError) {
    var isDirectory = stat()
    if stat(path, &isDirectory) == 0 { return }
    let (parent, _) = splitPath(path)
    if parent != path && parent != "." && parent != "/" { try makeDirectories(parent) }
    guard mkdir(path, 0o700) == 0 || errno == EEXIST else {
        throw FileError("cannot create the directory \(quotedPath(path))")
    }
}

/// Runs `body` holding an exclusive advisory lock (`flock`) on `directory`. Every writer of a
/// file in the directory takes it around its read-modify-write, so that no update is lost.
/// - Returns: nil when another process held the lock for `timeout` seconds; `body` did not run.
/// - Throws: ``FileError`` when the directory cannot be opened or locked, or what `body` throws.
package func withDirectoryLock<Result, Failure: Error>(
    _ directory: String, timeout: Double, _ body: () throws(Failure) -> Result
) throws -> Result? {
    let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard fd >= 0 else { throw FileError("cannot open the directory \(quotedPath(directory))") }
    defer { close(fd) }  // releases the lock
    guard try lockExclusively(fd, timeout: timeout, operation: "cannot lock the directory \(quotedPath(directory))")
    else { return nil }
    return try body()
}

/// Takes an exclusive advisory lock (`flock`) on `fd`, waiting up to `timeout` seconds for the
/// process that holds it; it is held until `fd` is closed.
/// - Returns: false when another process held it for `timeout` seconds.
/// - Throws: ``FileError`` with `operation` when `fd` cannot be locked at all.
package func lockExclusively(_ fd: Int32, timeout: Double, operation: @autoclosure () -> String) throws(FileError)
    -> Bool
{
    let deadline = monotonicSeconds() + timeout
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
        guard errno == EWOULDBLOCK || errno == EINTR else { throw FileError(operation()) }
        guard monotonicSeconds() < deadline else { return false }
        usleep(2_000)
    }
    return true
}

package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Seconds since boot, the time suspended included (CLOCK_BOOTTIME, as ssh-agent's key
/// lifetimes count): a time limit ends on time even across a suspend.
package func bootSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_BOOTTIME, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Calls `body` (bind or connect) with the address of the Unix socket at `socketPath` (the bytes
/// of `sun_path`; an abstract name starts with a NUL), sized to the path as abstract names need.
/// A path longer than `sun_path` holds is reached through its directory (`/proc/self/fd/N/NAME`);
/// where even that is too long, -1 with `ENAMETOOLONG`.
package func withUnixSocketAddress(
    _ socketPath: [UInt8], _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
) -> Int32 {
    var address = sockaddr_un()
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard socketPath.count < capacity else {
        // A path too long for sun_path (a long $XDG_RUNTIME_DIR): the same socket through its
        // directory, open, as /proc/self/fd/N/NAME.
        guard socketPath.first == UInt8(ascii: "/"), let slash = socketPath.lastIndex(of: UInt8(ascii: "/")) else {
            errno = ENAMETOOLONG
            return -1
        }
        // O_PATH (Glibc's module has it only under _GNU_SOURCE; its value on x86_64 and arm64).
        let directory = open(
            String(decoding: socketPath[..<max(slash, 1)], as: UTF8.self), 0o10_000_000 | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return -1 }
        defer { close(directory) }
        let short = Array("/proc/self/fd/\(directory)".utf8) + socketPath[slash...]
        guard short.count < capacity else {
            errno = ENAMETOOLONG
            return -1
        }
        return withUnixSocketAddress(short, body)
    }
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: socketPath) }
    let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + socketPath.count)
    return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
}
