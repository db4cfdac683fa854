internal import CLinux
import Glibc

// Files written whole or not at all: the vault, `-o` results, generated keys.

/// Where a writer puts its bytes: a file being written, or a descriptor written into.
package struct ByteSink {
    fileprivate let fd: Int32
    fileprivate let path: String

    package init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Writes all of `bytes`.
    /// - Throws: ``FileError`` naming the path (a full disk, a closed pipe, …).
    package func write(_ bytes: some Collection<UInt8>) throws(FileError) {
        let written =
            bytes.withContiguousStorageIfAvailable { writeAll(fd, $0) }
            ?? Array(bytes).withUnsafeBufferPointer { writeAll(fd, $0) }
        guard written else { throw FileError("cannot write \(quotedPath(path))") }
    }
}

/// Writes `bytes` to `path` atomically: see ``writeFileAtomically(_:replacing:_:)``.
package func writeFileAtomically(
    _ path: String, _ bytes: [UInt8], replacing: Bool = true, sweeping: Bool = true,
    beforeReplacing: () -> Bool = { true }
) throws(FileError) {
    try writeFileAtomically(path, replacing: replacing, sweeping: sweeping, beforeReplacing: beforeReplacing) {
        sink throws(FileError) in
        try sink.write(bytes)
    }
}

/// Writes what `body` gives its sink to `path` so that readers see the old file or the new one,
/// never a part, and so that no interruption leaves a copy behind (the file may hold secrets).
///
/// The bytes go to an unnamed file in the same directory (`O_TMPFILE`, mode 0600), fsynced; it
/// then gets its name with `linkat`: `path` itself when there is no file there, else a temporary
/// `.NAME.keychain-cli.XXXXXX` renamed over `path` at once, with SIGINT, SIGTERM, SIGHUP and
/// SIGQUIT held back between the two calls. Then the directory is fsynced. A file system without
/// `O_TMPFILE` gets a named temporary file instead, with the same signals held back until it is
/// renamed or removed. Only SIGKILL or a crash in those microseconds can leave a temporary file;
/// the next write of the same path removes it once it is a minute old (the vault's, under its
/// lock, at once), unless `sweeping` is false (a tree vault's item: it costs a read of the whole
/// directory). With `replacing` false an existing `path` is never replaced, even one created a
/// moment before: the new file only ever gets its name by a link, which fails with `EEXIST`.
/// `beforeReplacing` is asked last, once the new file is written and synced: false leaves `path`
/// untouched (`ECANCELED`).
/// - Throws: ``FileError`` naming the path, or what `body` throws; `path` is then untouched.
package func writeFileAtomically(
    _ path: String, replacing: Bool = true, sweeping: Bool = true, beforeReplacing: () -> Bool = { true },
    _ body: (ByteSink) throws(FileError) -> Void
) throws(FileError) {
    let (directory, name) = splitPath(path)
    // What an earlier writer killed between linkat and rename left (see above); not where the
    // directory is too large to read on every write (a tree vault's service: its writer keeps
    // such names out of its listings, and git out of commits).
    if sweeping { removeStrayTemporaries(of: path, olderThan: 60) }
    let unnamed = keychain_cli_open_unnamed(directory)
    guard unnamed >= 0 else {
        guard errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL else {
            throw FileError("cannot create a file in \(quotedPath(directory))")
        }
        return try withSignalsHeldBack { () throws(FileError) in
            try writeThroughNamedTemporary(
                path, directory: directory, name: name, replacing: replacing, beforeReplacing: beforeReplacing, body)
        }
    }
    defer { close(unnamed) }
    try body(ByteSink(fd: unnamed, path: path))
    guard fchmod(unnamed, 0o600) == 0, fsync(unnamed) == 0 else { throw FileError("cannot write \(quotedPath(path))") }
    guard beforeReplacing() else { throw FileError("\(quotedPath(path)) was not replaced", code: ECANCELED) }
    let source = "/proc/self/fd/\(unnamed)"
    if linkat(AT_FDCWD, source, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0 {
        guard errno == EEXIST else { throw FileError("cannot create \(quotedPath(path))") }
        guard replacing else { throw FileError("\(quotedPath(path)) exists; it was not replaced", code: EEXIST) }
        try withSignalsHeldBack { () throws(FileError) in
            let temporary = "\(directory)/\(temporaryPrefix(of: name))\(randomSuffix())"
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

/// `writeFileAtomically` where the file system has no `O_TMPFILE`: a named temporary file.
private func writeThroughNamedTemporary(
    _ path: String, directory: String, name: String, replacing: Bool, beforeReplacing: () -> Bool,
    _ body: (ByteSink) throws(FileError) -> Void
) throws(FileError) {
    var template = Array("\(directory)/\(temporaryPrefix(of: name))XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }  // mode 0600
    guard fd >= 0 else { throw FileError("cannot create a file in \(quotedPath(directory))") }
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    var renamed = false
    defer {
        if !renamed { unlink(temporary) }
    }
    do {
        try body(ByteSink(fd: fd, path: path))
    } catch {
        close(fd)
        throw error
    }
    guard fchmod(fd, 0o600) == 0, fsync(fd) == 0 else {
        let error = FileError("cannot write \(quotedPath(path))")
        close(fd)
        throw error
    }
    close(fd)
    guard beforeReplacing() else { throw FileError("\(quotedPath(path)) was not replaced", code: ECANCELED) }
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

/// Makes a change of `directory`'s entries (a new name, a removed one) durable.
package func syncDirectory(_ directory: String) {
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryFD >= 0 {
        fsync(directoryFD)
        close(directoryFD)
    }
}

/// The start of the temporary names of `name`'s writes: `.NAME.keychain-cli.`, a name only this
/// program makes (a user's `.NAME.backup` is never taken for one); for a NAME too long to take
/// that (over 229 bytes), `.keychain-cli.HASH.` with a hash of NAME (FNV-1a, 64 bits).
private func temporaryPrefix(of name: String) -> String {
    let prefix = ".\(name).keychain-cli."
    if prefix.utf8.count + 6 <= Int(NAME_MAX) { return prefix }
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return ".keychain-cli.\(String(hash, radix: 16))."
}

/// An ASCII letter or digit: what mkstemp and ``randomSuffix()`` put in a temporary name.
private func isLetterOrDigit(_ byte: UInt8) -> Bool {
    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
}

/// Six random letters and digits, as mkstemp uses.
private func randomSuffix() -> String {
    let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    return String((0..<6).map { _ in alphabet.randomElement()! })
}

/// Removes the temporary files `writeFileAtomically(path, _)` leaves when a writer is killed
/// (`.NAME.keychain-cli.XXXXXX`, six letters or digits: regular, 0600, one link, the user's own), those last changed
/// over `age` seconds ago. Writers of a locked file (the vault) pass 0 under their lock; others
/// pass an age no live writer's temporary reaches (it exists for two system calls).
package func removeStrayTemporaries(of path: String, olderThan age: Double = 0) {
    let (directory, name) = splitPath(path)
    guard let stream = opendir(directory) else { return }
    defer { closedir(stream) }
    let prefix = temporaryPrefix(of: name)
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    while let entry = readdir(stream) {
        let entryName = withUnsafeBytes(of: entry.pointee.d_name) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        guard entryName.hasPrefix(prefix), entryName.utf8.count == prefix.utf8.count + 6,
            entryName.utf8.suffix(6).allSatisfy(isLetterOrDigit)
        else { continue }
        let candidate = "\(directory)/\(entryName)"
        var info = stat()
        guard lstat(candidate, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o7777 == 0o600,
            info.st_nlink == 1, info.st_uid == getuid(), Double(now.tv_sec - info.st_mtim.tv_sec) >= age
        else { continue }
        unlink(candidate)
    }
}
