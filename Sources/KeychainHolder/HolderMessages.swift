import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// One request to the holder: a JSON object after its length (4 bytes, big-endian). A client may
/// send many on one connection, each after the answer to the one before.
package struct HolderRequest: Codable, Sendable {
    package enum Operation: String, Codable, Sendable {
        /// `unlock`: hold `vault` with `header` and `fileKey` until `ttl`, or `idle` unused.
        case hold
        /// `lock`: forget `vault`, or every vault when it is nil.
        case forget
        /// What is held, and until when.
        case status
        case secret, secrets, store, add, delete, deleteAll, items
    }

    package var operation: Operation
    /// The vault file, as ``HolderRequest/vaultKey(_:)`` names it.
    package var vault: String?
    package var header: Data?
    package var fileKey: Data?
    package var stanzaTypes: [String]?
    package var ttl: Double?
    package var idle: Double?
    /// When the client stops waiting (CLOCK_MONOTONIC seconds, the same for every process): the
    /// holder waits for the vault's lock until then, and starts no write after it.
    package var deadline: Double?
    package var service: String?
    package var key: String?
    package var items: [Item]?

    package struct Item: Codable, Sendable {
        package var service: String
        package var key: String
        package var secret: Data?
    }

    package init(_ operation: Operation, vault: String?) {
        self.operation = operation
        self.vault = vault
    }

    /// The name a vault is held under: its absolute path with the links at its end and in its
    /// directory followed, so that `--vault v.age` from its directory and the same file by any
    /// other path or link are one vault.
    package static func vaultKey(_ path: String) -> String {
        var absolute = path
        if !path.hasPrefix("/") {
            if let directory = getcwd(nil, 0) {
                absolute = String(cString: directory) + "/" + path
                free(directory)
            }
        }
        let (directory, name) = splitPath(followingSymbolicLinks(absolute))
        guard let real = realpath(directory, nil) else { return directory + "/" + name }
        defer { free(real) }
        let resolved = String(cString: real)
        return (resolved == "/" ? "" : resolved) + "/" + name
    }
}

/// The holder's answer: `notHeld` (the client opens the vault itself), an error, or the result.
package struct HolderReply: Codable, Sendable {
    package var notHeld: Bool?
    package var error: KeychainError?
    package var secrets: [Data?]?
    package var flags: [Bool]?
    package var count: Int?
    package var items: [ItemInfo]?
    package var held: [HeldVault]?

    package init() {}

    package struct HeldVault: Codable, Sendable {
        package var vault: String
        /// Seconds left before the time limit, nil for none.
        package var expiresIn: Double?
        /// The idle limit in seconds, nil for none, and how long the vault has been unused.
        package var idle: Double?
        package var unused: Double
    }
}

/// send without waiting and without SIGPIPE (MSG_DONTWAIT | MSG_NOSIGNAL), and recv without
/// waiting: the values of Linux's headers, which Glibc's module does not name.
let sendFlags: Int32 = 0x40 | 0x4000
let receiveFlags: Int32 = 0x40

/// The framing both ends use.
package enum HolderWire {
    /// The largest message read: a vault's largest file, plus room for its encoding. The holder
    /// also keeps no more than this, in all, of requests not yet whole.
    static let limit = 400 << 20

    /// `value` as one message: its length (4 bytes, big-endian), then its JSON.
    static func framed(_ value: some Encodable) -> [UInt8]? {
        guard var body = try? JSONEncoder().encode(value) else { return nil }
        defer { wipe(&body) }
        let count = UInt32(body.count)
        var message = [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        message += body
        return message
    }

    /// The length a message's first four bytes give.
    static func length(_ prefix: ArraySlice<UInt8>) -> Int {
        let bytes = Array(prefix.prefix(4))
        return Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
    }

    /// The holder's reply to `request` on `fd`, waited for until `deadline` (CLOCK_MONOTONIC
    /// seconds); nil when the connection ended without one (the holder ended, or closed a
    /// connection it had kept long unused, or the reply did not decode).
    /// - Throws: ``KeychainError/holderTimedOut(socket:seconds:)`` (with `seconds`) when it did
    ///   not answer by then.
    package static func exchange(
        _ request: HolderRequest, on fd: Int32, socket: String, deadline: Double, seconds: Double
    ) throws(KeychainError) -> HolderReply? {
        guard var message = framed(request) else { return nil }
        defer { wipe(&message) }
        let timedOut = KeychainError.holderTimedOut(socket: socket, seconds: seconds)
        guard try transfer(fd, &message, writing: true, until: deadline, timedOut) else { return nil }
        var prefix = [UInt8](repeating: 0, count: 4)
        guard try transfer(fd, &prefix, writing: false, until: deadline, timedOut) else { return nil }
        let count = length(prefix[...])
        guard count <= limit else { return nil }
        // Read as it arrives, never more than arrived: a prefix does not decide what is allocated.
        var body: [UInt8] = []
        defer { wipe(&body) }
        while body.count < count {
            var part = [UInt8](repeating: 0, count: min(count - body.count, 1 << 16))
            defer { wipe(&part) }
            guard try transfer(fd, &part, writing: false, until: deadline, timedOut, partial: true) else { return nil }
            body += part
        }
        return try? JSONDecoder().decode(HolderReply.self, from: Data(body))
    }

    /// Writes all of `bytes`, or reads until `bytes` is full (with `partial`, whatever comes
    /// first, `bytes` cut to it), waiting until `deadline`; false at the end of the connection.
    private static func transfer(
        _ fd: Int32, _ bytes: inout [UInt8], writing: Bool, until deadline: Double, _ timedOut: KeychainError,
        partial: Bool = false
    ) throws(KeychainError) -> Bool {
        var done = 0
        while done < bytes.count {
            let left = deadline - monotonicSeconds()
            guard left > 0 else { throw timedOut }
            var poller = pollfd(fd: fd, events: Int16(writing ? POLLOUT : POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left * 1000 + 1, 3_600_000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { return false }
            if ready == 0 { continue }
            let count = bytes.withUnsafeMutableBytes { buffer in
                writing
                    ? Glibc.send(fd, buffer.baseAddress! + done, buffer.count - done, sendFlags)
                    : Glibc.recv(fd, buffer.baseAddress! + done, buffer.count - done, receiveFlags)
            }
            if count < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) { continue }
            guard count > 0 else { return false }
            done += count
            if partial {
                bytes.removeSubrange(done...)
                return true
            }
        }
        return true
    }
}
