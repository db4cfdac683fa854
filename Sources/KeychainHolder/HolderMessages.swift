import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// One request to the holder: a JSON object after its length (4 bytes, big-endian). A client may
/// send many on one connection, each after the answer to the one before. Each case carries what
/// it needs and nothing else.
package enum HolderRequest: Codable, Sendable {
    /// `unlock`: hold a vault with its header and file key.
    case hold(Hold)
    /// `lock`: forget `vault`, or every vault when it is nil.
    case forget(vault: String?)
    /// What is held, and until when.
    case status
    /// A read or a write of `vault` (as ``HolderRequest/vaultKey(_:)`` names it), carried out
    /// with the key held. `deadline` is when the client stops waiting (CLOCK_MONOTONIC seconds,
    /// the same for every process): the holder waits for the vault's lock until then, and starts
    /// no write after it.
    case use(vault: String, deadline: Double, operation: VaultOperation)

    package struct Hold: Codable, Sendable {
        /// The vault file, as ``HolderRequest/vaultKey(_:)`` names it.
        package var vault: String
        package var header: Data
        package var fileKey: HeldKey
        package var stanzaTypes: [String]
        /// Seconds until the vault is locked, and unused seconds after which it is; nil for none.
        package var ttl: Double?
        package var idle: Double?
        /// A tree vault (a directory): `fileKey` is an identity that opens it, `header` empty.
        package var tree: Bool?
        /// A tree vault's identity type, as ``TreeVaultStore/withHeldIdentity(_:)`` names it; nil
        /// for X25519.
        package var identity: String?

        package init(
            vault: String, header: Data, fileKey: HeldKey, stanzaTypes: [String], ttl: Double?, idle: Double?,
            tree: Bool = false, identity: String? = nil
        ) {
            (self.vault, self.header, self.fileKey, self.stanzaTypes) = (vault, header, fileKey, stanzaTypes)
            (self.ttl, self.idle, self.tree) = (ttl, idle, tree ? true : nil)
            self.identity = identity == "X25519" ? nil : identity
        }
    }

    /// What a request on a held vault does.
    package enum VaultOperation: Codable, Sendable {
        case secret(Address)
        case secrets([Address])
        case store([Item])
        case add([Item])
        case delete(Address)
        case deleteAll(service: String)
        case items(service: String?)
        /// ``SecretStore/replaceSecret(service:key:expected:with:)``, answered by `added`.
        case replace(Address, expected: Data?, new: Data?)

        /// Whether it changes the vault (and may wait for its lock).
        var writes: Bool {
            switch self {
            case .store, .add, .delete, .deleteAll, .replace: true
            case .secret, .secrets, .items: false
            }
        }
    }

    package struct Address: Codable, Sendable {
        package var service: String
        package var key: String
        package init(service: String, key: String) { (self.service, self.key) = (service, key) }
    }

    package struct Item: Codable, Sendable {
        package var service: String
        package var key: String
        package var secret: Data
        package init(service: String, key: String, secret: Data) {
            (self.service, self.key, self.secret) = (service, key, secret)
        }
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

/// A file key on its way to the holder: its bytes in one buffer of their own, never copied
/// (a class, so that passing the request on shares it), and overwritten when the last reference
/// goes. It travels as a JSON array of numbers, decoded straight into that buffer, so that no
/// string or growing array of the key is left behind by the decoding.
package final class HeldKey: Codable, @unchecked Sendable {
    // @unchecked: the buffer is written only in init and in deinit, which no other reference
    // outlives.
    private let buffer: UnsafeMutableRawBufferPointer
    /// More than any file key (age's are 16 bytes): a longer array is not one.
    static let largest = 64

    /// A copy of `bytes` (at most ``largest``, the rest is left out).
    package init(copying bytes: UnsafeRawBufferPointer) {
        buffer = .allocate(byteCount: min(bytes.count, Self.largest), alignment: 1)
        buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(buffer.count)))
    }

    deinit {
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
        buffer.deallocate()
    }

    /// Calls `body` with the key's bytes, which it must not keep.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(buffer))
    }

    package init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        guard let count = container.count, count <= Self.largest else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a file key")
        }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 1)
        do {
            for index in 0..<count { bytes[index] = try container.decode(UInt8.self) }
        } catch {
            if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
            bytes.deallocate()
            throw error
        }
        buffer = bytes
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for byte in buffer { try container.encode(byte) }
    }
}

/// The holder's answer to a request.
package enum HolderReply: Codable, Sendable {
    /// It does not hold the vault (or is ending, for a hold): the client opens the vault itself.
    case notHeld
    case failed(KeychainError)
    /// A hold or a store done.
    case done
    case secrets([Data?])
    /// For each item to add, whether it was added (or the one replaced, whether it was).
    case added([Bool])
    /// Items deleted.
    case deleted(Int)
    case items([ItemInfo])
    /// The vaults forgotten (`forget`), and those still held.
    case forgotten(Int, stillHeld: [HeldVault])
    case status([HeldVault])

    /// How many results it carries (secrets, flags), for a message about a wrong count.
    var resultCount: Int {
        switch self {
        case .secrets(let secrets): secrets.count
        case .added(let flags): flags.count
        default: 0
        }
    }

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
