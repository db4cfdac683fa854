#if canImport(Glibc)
    import Glibc
#endif

/// Writes `bytes` to `path` so that readers see the old file or the new one, never a part:
/// a temporary file in the same directory (created 0600, so a secret is never readable by
/// others even for a moment), fsynced, renamed over `path`, then the directory fsynced.
/// - Throws: ``CommandFailure`` (I/O) naming the path; `path` is then untouched.
func writeFileAtomically(_ path: String, _ bytes: [UInt8]) throws {
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    var template = Array("\(directory)/.\(name).XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }  // mode 0600
    guard fd >= 0 else { throw ioFailure("cannot create a file in '\(directory)'") }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    var renamed = false
    defer {
        if !renamed { unlink(temporary) }
    }
    let written = bytes.withUnsafeBufferPointer { writeAll(fd, $0) }
    guard written, fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
        close(fd)
        throw ioFailure("cannot write '\(path)'")
    }
    close(fd)
    guard rename(temporary, path) == 0 else { throw ioFailure("cannot replace '\(path)'") }
    renamed = true
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryFD >= 0 {
        fsync(directoryFD)
        close(directoryFD)
    }
}

private func ioFailure(_ what: String) -> CommandFailure {
    CommandFailure.io("\(what) (\(String(cString: strerror(errno)))). Check the path and its permissions")
}
