import Glibc

// Where `-o PATH` writes (export, inject): a file is replaced whole, anything else is written into
// as it is or refused; nothing but a regular file or a link is ever removed.

/// What is at an output path, and so how it is written.
package enum OutputTarget: Equatable {
    /// A regular file, nothing, or a link to either: replaced atomically (a link is replaced by
    /// the file, never written through: see docs/security.md).
    case file
    /// A FIFO or a character device (a terminal, /dev/null), itself or at the end of a link:
    /// opened and written into as it is, as a shell's `>` does.
    case stream
    /// /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: that descriptor of this process,
    /// written into where it stands (a file the shell opened with `>>` is appended to).
    case descriptor(Int32)
    /// A directory, block device or socket: refused, with what it is.
    case refused(String)

    /// What is at `path` now.
    package init(_ path: String) {
        if let descriptor = Self.descriptor(named: path) {
            self = .descriptor(descriptor)
            return
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            self = .file
            return
        }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            // A link is replaced unless it leads to something that is written into.
            guard stat(path, &info) == 0 else {
                self = .file
                return
            }
            let kind = Self(mode: info.st_mode)
            self = kind == .stream ? .stream : .file
            return
        }
        self = Self(mode: info.st_mode)
    }

    /// Whether `mode` is that of a FIFO or character device.
    fileprivate static func isStream(_ mode: mode_t) -> Bool {
        (mode & S_IFMT) == S_IFIFO || (mode & S_IFMT) == S_IFCHR
    }

    private init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .file
        case S_IFIFO, S_IFCHR: self = .stream
        case S_IFDIR: self = .refused("a directory")
        case S_IFBLK: self = .refused("a block device (a disk)")
        case S_IFSOCK: self = .refused("a socket")
        default: self = .refused("not a file")
        }
    }

    /// The descriptor of this process that `path` names, however it is spelled: a name in this
    /// process's /proc/PID/fd (/proc/self/fd/N, /dev/fd/N), or a link that leads to one
    /// (/dev/stdout, //dev/./stdout). Such a link may lead to a file the shell opened
    /// (`> out.json`); it is never to be replaced.
    private static func descriptor(named path: String) -> Int32? {
        var current = path
        for _ in 0..<40 {
            let (directory, name) = splitPath(current)
            guard let resolved = realpath(directory, nil) else { return nil }
            let canonical = String(cString: resolved)
            free(resolved)
            if isOwnDescriptorDirectory(canonical) {
                guard !name.isEmpty, name.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
                return Int32(name)
            }
            guard let target = linkTarget(canonical == "/" ? "/\(name)" : "\(canonical)/\(name)") else { return nil }
            current = target
        }
        return nil
    }

    /// /proc/PID/fd or /proc/PID/task/TID/fd of this process (what /proc/self/fd,
    /// /proc/thread-self/fd and /dev/fd resolve to).
    private static func isOwnDescriptorDirectory(_ directory: String) -> Bool {
        let parts = directory.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 3, parts[0] == "proc", parts[1] == "\(getpid())", parts.last == "fd" else { return false }
        return parts.count == 3 || (parts.count == 5 && parts[2] == "task")
    }
}

/// Writes what `body` gives its sink to the output file `path`, as ``OutputTarget`` says: a file
/// atomically (``writeFileAtomically(_:replacing:_:)``), a FIFO or device by opening it for
/// writing (a FIFO waits for its reader, as a shell's `>` does), a descriptor where it stands.
/// - Throws: ``FileError`` naming the path: it is a directory, block device or socket (`EISDIR`,
///   `ENOTSUP`), or cannot be written; a file is then untouched.
package func writeOutputFile(_ path: String, _ body: (ByteSink) throws(FileError) -> Void) throws(FileError) {
    switch OutputTarget(path) {
    case .file:
        try writeFileAtomically(path, body)
    case .refused(let kind):
        throw FileError(
            "\(quotedPath(path)) is \(kind); only a file is replaced, and only a FIFO or character device written into",
            code: kind == "a directory" ? EISDIR : ENOTSUP)
    case .stream:
        // What is opened must be the FIFO or device seen: a link swapped in meanwhile (to a file
        // of the user's, to the vault) is never written through.
        var seen = stat()
        guard stat(path, &seen) == 0, OutputTarget.isStream(seen.st_mode) else {
            throw FileError("\(quotedPath(path)) changed while it was opened; nothing was written", code: EAGAIN)
        }
        var fd: Int32
        repeat { fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw FileError("cannot open \(quotedPath(path))") }
        defer { close(fd) }
        var opened = stat()
        guard fstat(fd, &opened) == 0, opened.st_dev == seen.st_dev, opened.st_ino == seen.st_ino else {
            throw FileError("\(quotedPath(path)) changed while it was opened; nothing was written", code: EAGAIN)
        }
        try body(ByteSink(fd: fd, path: path))
    case .descriptor(let fd):
        try body(ByteSink(fd: fd, path: path))
    }
}
