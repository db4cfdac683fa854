import CLinux
import Glibc
import KeychainCore

/// `exec --file`: secrets handed to a command as files, as systemd's `LoadCredential=` hands
/// them to a service in `$CREDENTIALS_DIRECTORY`. The directory is new, 0700, on a tmpfs (never
/// on disk); each file is 0400 and can be read any number of times. A remover process, started
/// before the first file is written, deletes them all once this process (or, after exec, the
/// command) has ended, even by SIGKILL. It holds a flock on the directory while it waits: a
/// directory of ours that no one holds so (its remover was killed too) is removed by the next
/// `exec --file`.
struct CredentialsDirectory {
    let path: String
    /// The directory, open: what ``remove()`` removes from, whatever its path leads to by then.
    private let handle: Int32

    /// The tmpfs file systems' magic numbers (statfs): tmpfs and ramfs.
    private static let memoryFileSystems: Set<Int> = [0x0102_1994, 0x8584_58F6]

    /// Writes `files` into a new directory.
    /// - Throws: ``CommandFailure``: no tmpfs to write them to, or a failed write (74).
    init(writing files: [(name: String, secret: [UInt8])]) throws {
        let runtime = Environment.value("XDG_RUNTIME_DIR")
        guard let base = [runtime, "/dev/shm"].compactMap(\.self).first(where: Self.isSafeMemory) else {
            throw CommandFailure(
                kind: .io,
                message: "--file needs a tmpfs that only you (or root) can rename in, and neither $XDG_RUNTIME_DIR "
                    + "nor /dev/shm is one: the secrets would be written to disk or where another user could swap "
                    + "them. Set XDG_RUNTIME_DIR to a tmpfs directory of yours, or use --env")
        }
        Self.removeAbandoned(in: base)
        var template = Array("\(base)/\(Self.prefix)XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw Self.failure("cannot make a directory in \(quotedPath(base))")
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        // (fchmod: the modes whatever the umask.)
        guard directory >= 0, flock(directory, LOCK_EX) == 0, fchmod(directory, 0o700) == 0 else {
            let failure = Self.failure("cannot open \(quotedPath(path))")
            rmdir(path)
            throw failure
        }
        handle = directory  // the remover's copy keeps the lock too
        guard keychain_cli_spawn_remover(path, directory) > 0 else {
            let failure = Self.failure("cannot start the process that removes \(quotedPath(path))")
            rmdir(path)
            throw failure
        }
        for (name, secret) in files {
            let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o400)
            guard fd >= 0 else { throw Self.failure("cannot create \(quotedPath("\(path)/\(name)"))") }
            let written = fchmod(fd, 0o400) == 0 && secret.withUnsafeBufferPointer { writeAll(fd, $0) }
            let error = errno
            close(fd)
            guard written else {
                errno = error
                throw Self.failure("cannot write \(quotedPath("\(path)/\(name)"))")
            }
        }
    }

    /// Removes the directory and all it holds now (the remover finds nothing left).
    func remove() {
        keychain_cli_empty_directory(handle)
        keychain_cli_remove_emptied(handle, path)
        close(handle)
    }

    private static let prefix = "keychain-cli-exec."

    /// Removes the directories of earlier `exec --file` runs in `base` that are this user's, a
    /// minute old, and held by no remover (it was killed with keychain-cli: `pkill -9 -f`).
    private static func removeAbandoned(in base: String) {
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
    private static func isSafeMemory(_ path: String) -> Bool {
        var info = stat()
        guard path.hasPrefix("/"), stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
            info.st_uid == getuid() || info.st_uid == 0,
            info.st_mode & 0o022 == 0 || info.st_mode & S_ISVTX != 0
        else { return false }
        return memoryFileSystems.contains(Int(keychain_cli_file_system_type(path)))
    }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure(
            kind: .io,
            message: "\(what) for --file (\(String(cString: strerror(errno)))); nothing was run. Check that it is "
                + "writable and has room")
    }
}
