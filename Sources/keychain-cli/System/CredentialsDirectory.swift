import CLinux
import Glibc
import KeychainCore

/// `exec --file`: secrets handed to a command as files, as systemd's `LoadCredential=` hands
/// them to a service in `$CREDENTIALS_DIRECTORY`. The directory is new, 0700, on a tmpfs (never
/// on disk); each file is 0400 and can be read any number of times. A remover process, started
/// before the first file is written, deletes them all once this process (or, after exec, the
/// command) has ended, even by SIGKILL.
struct CredentialsDirectory {
    let path: String
    let names: [String]

    /// The tmpfs file systems' magic numbers (statfs): tmpfs and ramfs.
    private static let memoryFileSystems: Set<Int> = [0x0102_1994, 0x8584_58F6]

    /// Writes `files` into a new directory.
    /// - Throws: ``CommandFailure``: no tmpfs to write them to, or a failed write (74).
    init(writing files: [(name: String, secret: [UInt8])]) throws {
        let runtime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        guard let base = [runtime, "/dev/shm"].compactMap(\.self).first(where: Self.isMemory) else {
            throw CommandFailure(
                kind: .io,
                message: "--file needs a tmpfs, and neither $XDG_RUNTIME_DIR nor /dev/shm is one: the secrets "
                    + "would be written to disk. Set XDG_RUNTIME_DIR to a tmpfs directory of yours, or use --env")
        }
        var template = Array("\(base)/keychain-cli-exec.XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw Self.failure("cannot make a directory in \(quotedPath(base))")
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        names = files.map(\.name)
        var arguments = names.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        guard keychain_cli_spawn_remover(path, &arguments) > 0 else {
            let failure = Self.failure("cannot start the process that removes \(quotedPath(path))")
            rmdir(path)
            throw failure
        }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard directory >= 0 else { throw Self.failure("cannot open \(quotedPath(path))") }
        defer { close(directory) }
        for (name, secret) in files {
            let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o400)
            guard fd >= 0 else { throw Self.failure("cannot create \(quotedPath("\(path)/\(name)"))") }
            let written = secret.withUnsafeBufferPointer { writeAll(fd, $0) }
            let error = errno
            close(fd)
            guard written else {
                errno = error
                throw Self.failure("cannot write \(quotedPath("\(path)/\(name)"))")
            }
        }
    }

    /// Removes the files and the directory now (the remover finds nothing left).
    func remove() {
        for name in names { unlink("\(path)/\(name)") }
        rmdir(path)
    }

    private static func isMemory(_ path: String) -> Bool {
        path.hasPrefix("/") && memoryFileSystems.contains(Int(keychain_cli_file_system_type(path)))
    }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure(
            kind: .io,
            message: "\(what) for --file (\(String(cString: strerror(errno)))); nothing was run. Check that it is "
                + "writable and has room")
    }
}
