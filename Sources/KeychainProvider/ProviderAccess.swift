internal import CLibSecret
import FoundationEssentials
import Glibc
import KeychainDBus
import KeychainStore
import KeychainSystem

/// What `serve` records of each access to an item (`--access-log FILE`: one JSON line per read,
/// write and delete, never a secret) and which programs may read secrets (`--allow-exe PATH`).
public struct ProviderAccessPolicy: Sendable {
    /// The log, opened to append (one `write` a line, so lines of concurrent writers never mix).
    let log: Int32?
    /// The executables whose processes may read secrets (their real paths); nil: every one.
    let readers: Set<String>?

    /// No log, and every client may read.
    public static let unrestricted = ProviderAccessPolicy(log: nil, readers: nil)

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
}

/// The process behind a bus connection, as the bus daemon tells it (GetConnectionUnixProcessID,
/// GetConnectionUnixUser) and /proc shows its executable.
struct ProviderClient: Sendable {
    var pid: UInt32?
    var uid: UInt32?
    var executable: String?
}

/// One line of the access log.
private struct AccessRecord: Encodable {
    var time: Date
    var operation: String
    var service: String
    var key: String
    var allowed: Bool
    var pid: UInt32?
    var uid: UInt32?
    var executable: String?
}

extension SecretServiceProvider {
    /// What a client does to an item, as the log names it.
    enum Access: String {
        case read, write, delete
    }

    /// Records `access` to the item at `address` by the sender of `call`; a read by a program
    /// outside `--allow-exe` is recorded as refused and answered with D-Bus's AccessDenied.
    /// - Throws: ``ProviderError/accessDenied(_:)`` for a refused read, ``ProviderError/failed(_:)``
    ///   when the log cannot be written (serve then refuses every request: the log misses none).
    func check(_ access: Access, _ address: SecretAddress, by call: ProviderCall) throws(ProviderError) {
        guard try record(access, address, by: call) else { throw denial(call) }
    }

    /// Writes the line of `access` (when there is a log); whether it is allowed.
    /// - Throws: ``ProviderError/failed(_:)`` when the log cannot be written.
    func record(_ access: Access, _ address: SecretAddress, by call: ProviderCall) throws(ProviderError) -> Bool {
        guard policy.log != nil || policy.readers != nil else { return true }
        try requireWorkingLog()
        let client = client(call.sender)
        let allowed =
            access != .read
            || policy.readers.map { readers in client.executable.map(readers.contains) ?? false }
                ?? true
        if let log = policy.log {
            let record = AccessRecord(
                time: Date(), operation: access.rawValue, service: address.service.rawValue, key: address.key.rawValue,
                allowed: allowed, pid: client.pid, uid: client.uid, executable: client.executable)
            var line = (try? JSONEncoder.sortedKeys().encode(record)) ?? Data()
            line.append(UInt8(ascii: "\n"))
            let written = line.withUnsafeBytes { write(log, $0.baseAddress, $0.count) }
            if written != line.count {
                logFailure = written < 0 ? String(cString: strerror(errno)) : "a short write"
                try requireWorkingLog()
            }
        }
        return allowed
    }

    /// Refuses every request once the log could not be written.
    func requireWorkingLog() throws(ProviderError) {
        if let logFailure {
            throw .failed(
                "this Secret Service provider cannot write its access log (\(logFailure)); it answers no request "
                    + "until restarted")
        }
    }

    /// The refusal of a read by a program outside `--allow-exe`.
    func denial(_ call: ProviderCall) -> ProviderError {
        .accessDenied(
            "this Secret Service provider lets only the programs it was told to allow read secrets; "
                + "\(client(call.sender).executable ?? "this client") is not one of them")
    }

    /// The process behind the bus name `sender`, asked of the bus once per connection.
    func client(_ sender: String) -> ProviderClient {
        if let known = clients[sender] { return known }
        func ask(_ method: String) -> UInt32? {
            busCall(method, Variant.tuple([Variant.string(sender)]), keychain_cli_type_uint32_reply())?.child(0).uint32
        }
        var client = ProviderClient(pid: ask("GetConnectionUnixProcessID"), uid: ask("GetConnectionUnixUser"))
        if let pid = client.pid {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
            if count > 0 {
                client.executable = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
        }
        clients[sender] = client
        return client
    }
}
