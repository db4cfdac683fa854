import FoundationEssentials
import Glibc
import KeychainSystem

/// What a server of secrets records of each access (`--access-log FILE`: one JSON line per
/// access, never a secret) and which programs may have secrets (`--allow-exe PATH`): serve's
/// Secret Service and the ssh-agent.
public struct AccessPolicy: Sendable {
    /// The log, opened to append (one `write` a line, so lines of concurrent writers never mix).
    package let log: Int32?
    /// The executables whose processes may have secrets (their real paths); nil: every one.
    package let readers: Set<String>?

    /// No log, and every client may read.
    public static let unrestricted = AccessPolicy(log: nil, readers: nil)

    private init(log: Int32?, readers: Set<String>?) { (self.log, self.readers) = (log, readers) }

    /// Appends to the file at `logPath` (created 0600; a symbolic link or anything but a regular
    /// file is refused), and lets only the processes of `allowedExecutables` read, when any.
    /// - Throws: ``KeychainError/vaultIO(detail:)`` when the log cannot be opened (74),
    ///   ``KeychainError/badConfiguration(detail:)`` when an executable does not exist (64).
    public init(logPath: String?, allowedExecutables: [String]) throws(KeychainError) {
        var readers: Set<String>?
        if !allowedExecutables.isEmpty {
            readers = []
            for path in allowedExecutables {
                guard let real = realpath(path, nil) else {
                    throw .badConfiguration(
                        detail: "the program \(quotedPath(path)) allowed to read cannot be found "
                            + "(\(String(cString: strerror(errno)))): give its full path")
                }
                readers?.insert(String(cString: real))
                free(real)
            }
        }
        guard let logPath else {
            self.init(log: nil, readers: readers)
            return
        }
        // Non-blocking: a FIFO with no reader fails at once (ENXIO) rather than wait for one.
        let fd = Glibc.open(logPath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw .vaultIO(
                detail: "cannot open the access log \(quotedPath(logPath)) (\(String(cString: strerror(errno))))")
        }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw .vaultIO(detail: "the access log \(quotedPath(logPath)) is not a regular file")
        }
        self.init(log: fd, readers: readers)
    }

    /// Whether a process running `executable` may have secrets.
    package func allows(_ executable: String?) -> Bool {
        readers.map { readers in executable.map(readers.contains) ?? false } ?? true
    }

    /// Writes `record` as one line of the log, if there is one; why it could not, or nil.
    package func append(_ record: some Encodable) -> String? {
        guard let log else { return nil }
        var line = (try? JSONEncoder.sortedKeys().encode(record)) ?? Data()
        line.append(UInt8(ascii: "\n"))
        let written = line.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
        guard written != line.count else { return nil }
        return written < 0 ? String(cString: strerror(errno)) : "a short write"
    }

    /// The executable process `pid` runs, as /proc shows it.
    package static func executable(ofProcess pid: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
