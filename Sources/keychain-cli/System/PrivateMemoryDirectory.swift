import CLinux
import Glibc
import KeychainCore

/// A new directory of this user's alone (0700) on a tmpfs, never on disk, for secrets handed to
/// another program as files: `exec --file`'s and `edit`'s. A remover process, started before
/// anything is written in it, deletes it and all it holds once this process (or, after exec, the
/// command) has ended, even by SIGKILL. It holds a flock on the directory while it waits: a
/// directory of ours that no one holds so (its remover was killed too) is removed by the next run
/// that makes one with the same prefix.
struct PrivateMemoryDirectory {
    let path: String
    /// The file system it was made in (`$XDG_RUNTIME_DIR`, or /dev/shm).
    let base: String
    /// The directory, open: what ``remove()`` removes from, whatever its path leads to by then.
    let handle: Int32

    /// The tmpfs file systems' magic numbers (statfs): tmpfs and ramfs.
    private static let memoryFileSystems: Set<Int> = [0x0102_1994, 0x8584_58F6]

    /// Makes a directory named `prefix` and six random characters in the first of `bases` that is
    /// a safe tmpfs (``isSafeMemory(_:)``), and starts its remover.
    /// - Throws: ``CommandFailure`` (74): `refusal` when none of `bases` is one; `failure` words
    ///   what could not be made (a directory, its remover).
    init(prefix: String, bases: [String?], refusal: String, failure: (String) -> CommandFailure) throws {
        guard let base = bases.compactMap(\.self).first(where: Self.isSafeMemory) else {
            throw CommandFailure(kind: .io, message: refusal)
        }
        Self.removeAbandoned(in: base, prefix: prefix)
        var template = Array("\(base)/\(prefix)XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw failure("cannot make a directory in \(quotedPath(base))") }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        self.base = base
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        // (fchmod: the modes whatever the umask.)
        guard directory >= 0, flock(directory, LOCK_EX) == 0, fchmod(directory, 0o700) == 0 else {
            let error = failure("cannot open \(quotedPath(path))")
            rmdir(path)
            throw error
        }
        handle = directory  // the remover's copy keeps the lock too
        guard keychain_cli_spawn_remover(path, directory) > 0 else {
            let error = failure("cannot start the process that removes \(quotedPath(path))")
            rmdir(path)
            throw error
        }
    }

    /// Writes `secret` to the new file `name` in the directory, with `mode`.
    /// - Throws: `failure`'s ``CommandFailure`` when it cannot be written.
    func write(_ secret: [UInt8], to name: String, mode: mode_t, failure: (String) -> CommandFailure) throws {
        let fd = openat(handle, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot create \(quotedPath("\(path)/\(name)"))") }
        let written = fchmod(fd, mode) == 0 && secret.withUnsafeBufferPointer { writeAll(fd, $0) }
        let error = errno
        close(fd)
        guard written else {
            errno = error
            throw failure("cannot write \(quotedPath("\(path)/\(name)"))")
        }
    }

    /// Removes the directory and all it holds now (the remover finds nothing left).
    func remove() {
        keychain_cli_empty_directory(handle)
        keychain_cli_remove_emptied(handle, path)
        close(handle)
    }

    /// Removes the directories named `prefix…` of earlier runs in `base` that are this user's, a
    /// minute old, and held by no remover (it was killed with keychain-cli: `pkill -9 -f`).
    private static func removeAbandoned(in base: String, prefix: String) {
        guard let listing = opendir(base) else { return }
        defer { closedir(listing) }
        let parent = dirfd(listing)
        var mount = stat()
        guard fstat(parent, &mount) == 0 else { return }
        while let entry = readdir(listing) {
            let name = Self.name(of: entry)
            var info = stat()
            guard name.hasPrefix(prefix), fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0,
                info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), time(nil) - info.st_mtim.tv_sec > 60
            else { continue }
            // (Made u+rwx first: the command may have made it 000.)
            let handle = keychain_cli_open_inner(parent, name, &mount)
            guard handle >= 0 else { continue }
            defer { close(handle) }
            guard flock(handle, LOCK_EX | LOCK_NB) == 0 else { continue }
            keychain_cli_empty_directory(handle)
            unlinkat(parent, name, AT_REMOVEDIR)
        }
    }

    private static func name(of entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// Whether `path` is a directory on a tmpfs where no other user can rename or replace what
    /// we make: ours or root's, and writable by no one else unless sticky (/dev/shm).
    static func isSafeMemory(_ path: String) -> Bool {
        var info = stat()
        guard path.hasPrefix("/"), stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
            info.st_uid == getuid() || info.st_uid == 0,
            info.st_mode & 0o022 == 0 || info.st_mode & S_ISVTX != 0
        else { return false }
        return memoryFileSystems.contains(Int(keychain_cli_file_system_type(path)))
    }
}
