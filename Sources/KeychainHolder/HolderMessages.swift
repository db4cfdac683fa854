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

/// The framing both ends use.
package enum HolderWire {
    /// The largest message read: a vault's largest file, plus room for its encoding.
    static let limit = 400 << 20

    package static func send(_ value: some Encodable, on fd: Int32) -> Bool {
        guard var body = try? JSONEncoder().encode(value) else { return false }
        defer { wipe(&body) }
        let count = UInt32(body.count)
        var message = [UInt8(count >> 24), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        message += body
        defer { wipe(&message) }
        return message.withUnsafeBufferPointer { writeAll(fd, $0) }
    }

    /// The holder's reply to `request` on `fd`; nil when the connection ended without one (the
    /// holder ended, or the message did not decode).
    /// - Throws: ``KeychainError/holderTimedOut(socket:seconds:)`` when it did not answer within
    ///   the socket's timeout, `seconds`.
    package static func exchange(_ request: HolderRequest, on fd: Int32, socket: String, seconds: Double)
        throws(KeychainError) -> HolderReply?
    {
        guard send(request, on: fd), let reply = receive(HolderReply.self, on: fd) else {
            if errno == EAGAIN || errno == EWOULDBLOCK { throw .holderTimedOut(socket: socket, seconds: seconds) }
            return nil
        }
        return reply
    }

    /// The next message, nil at the end of the connection, a timeout, or a message that is too
    /// large or does not decode.
    package static func receive<Value: Decodable>(_ type: Value.Type, on fd: Int32) -> Value? {
        guard let prefix = read(4, from: fd) else { return nil }
        let count = Int(prefix[0]) << 24 | Int(prefix[1]) << 16 | Int(prefix[2]) << 8 | Int(prefix[3])
        guard count <= limit, var body = read(count, from: fd) else { return nil }
        defer { wipe(&body) }
        return try? JSONDecoder().decode(type, from: Data(body))
    }

    private static func read(_ count: Int, from fd: Int32) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, count - offset) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }
}
