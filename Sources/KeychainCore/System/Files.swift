import CLinux
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

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a part, and so
/// that no interruption leaves a copy behind (the file may hold secrets).
///
/// The bytes go to an unnamed file in the same directory (`O_TMPFILE`, mode 0600), fsynced; it
/// then gets its name with `linkat`: `path` itself when there is no file there, else a temporary
/// `.NAME.XXXXXX` renamed over `path` at once, with SIGINT, SIGTERM, SIGHUP and SIGQUIT held back
/// between the two calls. Then the directory is fsynced. A file system without `O_TMPFILE` gets a
/// named temporary file instead, with the same signals held back until it is renamed or removed.
/// Only SIGKILL or a crash in those microseconds can leave a `.NAME.XXXXXX` file; the next write
/// of the same path removes it once it is a minute old (the vault's, under its lock, at once).
/// With `replacing` false an existing `path` is never replaced, even one created a moment before:
/// the new file only ever gets its name by a link, which fails with `EEXIST`.
/// - Throws: ``FileError`` naming the path; `path` is then untouched.
package func writeFileAtomically(_ path: String, _ bytes: [UInt8], replacing: Bool = true) throws(FileError) {
    let (directory, name) = splitPath(path)
    // What an earlier writer killed between linkat and rename left (see above).
    removeStrayTemporaries(of: path, olderThan: 60)
    let unnamed = keychain_cli_open_unnamed(directory)
    guard unnamed >= 0 else {
        guard errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL else {
            throw FileError("cannot create a file in \(quotedPath(directory))")
        }
        return try withSignalsHeldBack { () throws(FileError) in
            try writeThroughNamedTemporary(path, directory: directory, name: name, bytes, replacing: replacing)
        }
    }
    defer { close(unnamed) }
    guard bytes.withUnsafeBufferPointer({ writeAll(unnamed, $0) }), fchmod(unnamed, 0o600) == 0, fsync(unnamed) == 0
    else { throw FileError("cannot write \(quotedPath(path))") }
    let source = "/proc/self/fd/\(unnamed)"
    if linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0 {
        guard errno == EEXIST else { throw FileError("cannot create \(quotedPath(path))") }
        guard replacing else { throw FileError("\(quotedPath(path)) exists; it was not replaced", code: EEXIST) }
        try withSignalsHeldBack { () throws(FileError) in
            let temporary = "\(directory)/.\(name).\(randomSuffix())"
            guard linkat(AT_FDCWD, source, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) == 0 else {
                throw FileError("cannot create a file in \(quotedPath(directory))")
            }
            guard rename(temporary, path) == 0 else {
                let error = FileError("cannot replace \(quotedPath(path))")
                unlink(temporary)
                throw error
            }
        }
    }
    syncDirectory(directory)
}

/// `writeFileAtomically` where the file system has no `O_TMPFILE`: a named `.NAME.XXXXXX` file.
private func writeThroughNamedTemporary(
    _ path: String, directory: String, name: String, _ bytes: [UInt8], replacing: Bool
) throws(FileError) {
    var template = Array("\(directory)/.\(name).XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }  // mode 0600
    guard fd >= 0 else { throw FileError("cannot create a file in \(quotedPath(directory))") }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    var renamed = false
    defer {
        if !renamed { unlink(temporary) }
    }
    let written = bytes.withUnsafeBufferPointer { writeAll(fd, $0) }
    guard written, fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
        let error = FileError("cannot write \(quotedPath(path))")
        close(fd)
        throw error
    }
    close(fd)
    guard replacing else {
        // link fails if the name exists; the deferred unlink removes the temporary name.
        guard link(temporary, path) == 0 else {
            throw errno == EEXIST
                ? FileError("\(quotedPath(path)) exists; it was not replaced", code: EEXIST)
                : FileError("cannot create \(quotedPath(path))")
        }
        syncDirectory(directory)
        return
    }
    guard rename(temporary, path) == 0 else { throw FileError("cannot replace \(quotedPath(path))") }
    renamed = true
    syncDirectory(directory)
}

private func syncDirectory(_ directory: String) {
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryFD >= 0 {
        fsync(directoryFD)
        close(directoryFD)
    }
}

/// Six random letters and digits, as mkstemp uses.
private func randomSuffix() -> String {
    let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    return String((0..<6).map { _ in alphabet.randomElement()! })
}

/// Removes the temporary files `writeFileAtomically(path, _)` leaves when a writer is killed
/// (`.NAME.XXXXXX`, regular, 0600, ours), those last changed over `age` seconds ago. Writers of a
/// locked file (the vault) pass 0 under their lock; others pass an age no live writer's
/// temporary reaches (it exists for two system calls).
package func removeStrayTemporaries(of path: String, olderThan age: Double = 0) {
    let (directory, name) = splitPath(path)
    guard let stream = opendir(directory) else { return }
    defer { closedir(stream) }
    let prefix = ".\(name)."
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    while let entry = readdir(stream) {
        let entryName = withUnsafeBytes(of: entry.pointee.d_name) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        guard entryName.hasPrefix(prefix) && entryName.utf8.count == prefix.utf8.count + 6 else { continue }
        let candidate = "\(directory)/\(entryName)"
        var info = stat()
        guard lstat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o077 == 0,
            info.st_uid == getuid(), Double(now.tv_sec - info.st_mtim.tv_sec) >= age
        else { continue }
        unlink(candidate)
    }
}

/// Reads `fd` to its end, refusing more than `limit` bytes (nothing is ever silently truncated).
/// - Returns: nil when there are more than `limit` bytes.
/// - Throws: ``FileError`` with `operation` when a read fails (EINTR is retried).
package func readToEnd(_ fd: Int32, limit: Int, operation: @autoclosure () -> String) throws(FileError) -> [UInt8]? {
    var bytes: [UInt8] = []
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
/// - Throws: ``FileError`` when it cannot be read, or is larger than `limit` bytes (`EFBIG`).
package func readFileIfPresent(_ path: String, limit: Int) throws(FileError) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 && errno == ENOENT { return nil }
    guard fd >= 0 else { throw FileError("cannot open \(quotedPath(path))") }
    defer { close(fd) }
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
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(current, &buffer, buffer.count - 1)
        guard count > 0 else { return current }
        let target = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        current = target.hasPrefix("/") ? target : "\(splitPath(current).directory)/\(target)"
    }
    return current
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
    let deadline = monotonicSeconds() + timeout
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
        guard errno == EWOULDBLOCK || errno == EINTR else {
            throw FileError("cannot lock the directory \(quotedPath(directory))")
        }
        guard monotonicSeconds() < deadline else { return nil }
        usleep(2_000)
    }
    return try body()
}

package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Calls `body` (bind or connect) with the address of the Unix socket at `socketPath` (the bytes
/// of `sun_path`; an abstract name starts with a NUL), sized to the path as abstract names need.
package func withUnixSocketAddress(
    _ socketPath: [UInt8], _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    precondition(socketPath.count < MemoryLayout.size(ofValue: address.sun_path), "sun_path holds 108 bytes")
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: socketPath) }
    let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + socketPath.count)
    return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) } }
}
