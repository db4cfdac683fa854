import CLinux
import Glibc
import KeychainStore
import KeychainSystem

/// Where this user's holder listens: a directory private to the user, `$XDG_RUNTIME_DIR/keychain-cli`
/// (else `/tmp/keychain-cli-UID`, as tmux does), with the socket `holder.sock` and the lock
/// `holder.lock` its holder keeps for as long as it runs. Both ends check the other: the
/// directory must be the user's and private, the holder takes only clients of its own uid, and
/// a client talks only to a socket its own uid listens on (SO_PEERCRED, both ways).
package struct HolderPlace: Sendable {
    package let directory: String

    package init(directory: String) { self.directory = directory }

    package var socket: String { directory + "/holder.sock" }
    package var lockFile: String { directory + "/holder.lock" }

    /// The place of this process's user.
    package static func current() -> HolderPlace {
        if let runtime = Environment.value("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
            return HolderPlace(directory: runtime + "/keychain-cli")
        }
        return HolderPlace(directory: "/tmp/keychain-cli-\(geteuid())")
    }

    /// Checks that the directory is this user's, a real directory, and private (0700), making
    /// it first when `creating`.
    /// - Returns: false when it does not exist (and is not made).
    /// - Throws: ``KeychainError/insecureFile(detail:)`` when it is another user's, open to
    ///   others or not a directory: nothing is put in it, nothing read from it.
    package func check(creating: Bool) throws(KeychainError) -> Bool {
        var info = stat()
        if lstat(directory, &info) != 0 {
            guard errno == ENOENT else {
                // $XDG_RUNTIME_DIR another user's (su and sudo keep it): not ours to use.
                throw .insecureFile(
                    detail: FileError("cannot use the holder's directory \(quotedPath(directory))").description
                        + "; set XDG_RUNTIME_DIR to a private directory of yours")
            }
            guard creating else { return false }
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw .insecureFile(
                    detail: FileError("cannot make the holder's directory \(quotedPath(directory))").description
                        + "; set XDG_RUNTIME_DIR to a private directory of yours")
            }
            guard lstat(directory, &info) == 0 else { return false }
        }
        let fix = "; remove it, or set XDG_RUNTIME_DIR to a private directory of yours"
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw .insecureFile(detail: "the holder's directory \(quotedPath(directory)) is not a directory" + fix)
        }
        guard info.st_uid == geteuid() else {
            throw .insecureFile(
                detail: "the holder's directory \(quotedPath(directory)) belongs to uid \(info.st_uid), not to you"
                    + fix)
        }
        guard info.st_mode & 0o077 == 0 else {
            throw .insecureFile(
                detail: "the holder's directory \(quotedPath(directory)) is open to others (mode "
                    + "\(String(info.st_mode & 0o777, radix: 8)), not 700); chmod 700 it")
        }
        return true
    }

    /// A connection to the holder, or nil when none runs (no directory, no socket, or a socket
    /// nobody listens on, as SIGKILL leaves it). Waits `timeout` seconds at most.
    /// - Throws: ``KeychainError/insecureFile(detail:)`` when the directory is not private or
    ///   another uid listens on the socket; ``KeychainError/holderTimedOut(socket:seconds:)`` when
    ///   it did not take the connection in time.
    package func connect(timeout: Double) throws(KeychainError) -> Int32? {
        guard try check(creating: false) else { return nil }
        let fd = try Self.unixSocket()
        // Before connect, which waits as long while the holder's backlog is full.
        Self.setTimeout(fd, seconds: timeout)
        let connected = withUnixSocketAddress(Array(socket.utf8)) { Glibc.connect(fd, $0, $1) }
        guard connected == 0 else {
            let error = errno
            close(fd)
            // Its backlog stayed full for all of `timeout`: a holder runs, and did not take us.
            if error == EAGAIN || error == EINPROGRESS { throw .holderTimedOut(socket: socket, seconds: timeout) }
            return nil
        }
        var peer = keychain_cli_peer()
        guard keychain_cli_peer_credentials(fd, &peer) == 0, peer.uid == geteuid() else {
            close(fd)
            throw .holderNotOurs(socket: socket, uid: peer.uid)
        }
        return fd
    }

    /// Listens on the socket, replacing one a dead holder left: the caller holds the lock file,
    /// so no live holder listens there.
    package func listen() throws(KeychainError) -> Int32 {
        unlink(socket)
        return try Self.listen(at: socket)
    }

    /// A socket listening at `path` (mode 0600), which must not exist.
    package static func listen(at path: String) throws(KeychainError) -> Int32 {
        let fd = try unixSocket()
        let previous = umask(0o177)
        let bound = withUnixSocketAddress(Array(path.utf8)) { bind(fd, $0, $1) }
        umask(previous)
        guard bound == 0, Glibc.listen(fd, SOMAXCONN) == 0 else {
            let failure = FileError("cannot listen on \(quotedPath(path))")
            close(fd)
            throw .vaultIO(detail: failure.description)
        }
        return fd
    }

    private static func unixSocket() throws(KeychainError) -> Int32 {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .vaultIO(detail: FileError("cannot make a socket").description) }
        return fd
    }

    /// Takes the lock only one holder at a time keeps, waiting up to `seconds` for one that is
    /// ending; the descriptor stays open (and the lock held) until the process ends.
    /// - Returns: false when another holder keeps it.
    package func takeLock(waiting seconds: Double) throws(KeychainError) -> Bool {
        let fd = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .vaultIO(detail: FileError("cannot open \(quotedPath(lockFile))").description) }
        do {
            guard try lockExclusively(fd, timeout: seconds, operation: "cannot lock \(quotedPath(lockFile))") else {
                close(fd)
                return false
            }
        } catch {
            close(fd)
            throw .vaultIO(detail: error.description)
        }
        return true
    }

    /// Sets how long a read or write on `fd` may wait.
    package static func setTimeout(_ fd: Int32, seconds: Double) {
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
        let size = socklen_t(MemoryLayout<timeval>.size)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, size)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, size)
    }
}
