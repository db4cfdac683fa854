import KeychainAge
import KeychainSSH
import KeychainSystem

/// The keys `keychain-cli ssh-agent` holds, and what limits them: each key's lifetime (`ssh-add
/// -t`, `--ttl`) and confirmation (`ssh-add -c`), the agent's idle limit (`--idle`), and its lock
/// (`ssh-add -x`): locked, the keys are held only encrypted under the lock's password (age's
/// scrypt), so that the agent's memory holds none of them until `ssh-add -X`. Used under the
/// agent's lock: one thread at a time.
final class SSHAgentKeys {
    struct Held {
        var key: SSHPrivateKey
        var confirm: Bool
        /// Boot seconds when it is forgotten, if ever.
        var expires: Double?
    }

    /// What is kept of a key while the agent is locked: all but the key itself.
    private struct Sealed {
        var confirm: Bool
        var expires: Double?
    }

    private(set) var held: [Held] = []
    /// While locked: the keys' files encrypted under the password, and what else each had.
    private var sealed: (file: [UInt8], keys: [Sealed])?
    let idle: Double?
    /// Boot seconds of the last signature (or the start).
    private var lastUse: Double

    /// The scrypt work factor of the lock: about 50 ms, once per lock and unlock.
    private static let lockWorkFactor = 15

    init(idle: Double?, now: Double) { (self.idle, lastUse) = (idle, now) }

    var isLocked: Bool { sealed != nil }

    /// The keys and comments `ssh-add -l` lists: none while locked.
    var listed: [(key: SSHPublicKey, comment: String)] { held.map { ($0.key.publicKey, $0.key.comment) } }

    func find(_ publicKey: SSHPublicKey) -> Held? { held.first { $0.key.publicKey == publicKey } }

    /// Holds `key` (in place of the same key held before, as OpenSSH's agent does).
    func add(_ key: SSHPrivateKey, lifetime: Double?, confirm: Bool, now: Double) {
        // A key added is as good as a key used: the idle limit counts from here.
        lastUse = now
        let entry = Held(key: key, confirm: confirm, expires: lifetime.map { now + $0 })
        if let index = held.firstIndex(where: { $0.key.publicKey == key.publicKey }) {
            held[index] = entry
        } else {
            held.append(entry)
        }
    }

    func remove(_ publicKey: SSHPublicKey) -> Bool {
        guard let index = held.firstIndex(where: { $0.key.publicKey == publicKey }) else { return false }
        held.remove(at: index)
        return true
    }

    /// Forgets every key, sealed ones too (the lock's password then unlocks an empty agent).
    func removeAll() {
        held.removeAll()
        sealed?.keys = []
    }

    /// A signature was made: the idle limit starts again.
    func used(now: Double) { lastUse = now }

    /// Forgets the keys whose lifetime ended, and all of them once idle too long.
    func forgetExpired(now: Double) {
        if let idle, now - lastUse >= idle {
            removeAll()
            return
        }
        // (Sealed keys whose lifetime ended are left out when unlocked.)
        held.removeAll { $0.expires.map { $0 <= now } ?? false }
    }

    /// The boot seconds of the next limit, if any.
    var nextLimit: Double? {
        // (No key held, no idle limit to wait for: the timer would fire again and again.)
        let idleEnd = held.isEmpty ? nil : idle.map { lastUse + $0 }
        return (held.compactMap(\.expires) + [idleEnd].compactMap(\.self)).min()
    }

    /// Locks with `password`: every key is encrypted under it and the keys themselves dropped.
    /// False when already locked.
    func lock(_ password: [UInt8]) -> Bool {
        guard sealed == nil else { return false }
        var files = held.map { $0.key.openSSHFile() }
        defer { for index in files.indices { wipe(&files[index]) } }
        // Sized once: an array that grows leaves its earlier storage, and the keys in it, unwiped.
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(files.reduce(0) { $0 + 4 + $1.count })
        defer { wipe(&plaintext) }
        for file in files {
            plaintext += [UInt8(file.count >> 24), UInt8(file.count >> 16 & 0xff), UInt8(file.count >> 8 & 0xff)]
            plaintext += [UInt8(file.count & 0xff)]
            plaintext += file
        }
        guard
            let header = try? AgeFile.makeHeader(passphrase: password, workFactor: Self.lockWorkFactor),
            let file = try? AgeFile.encrypt(plaintext, header: header)
        else { return false }
        sealed = (file, held.map { Sealed(confirm: $0.confirm, expires: $0.expires) })
        held.removeAll()
        return true
    }

    /// Unlocks with `password`; false when it is not the lock's (or the agent is not locked).
    func unlock(_ password: [UInt8], now: Double) -> Bool {
        guard let (file, keys) = sealed,
            var plaintext = try? AgeFile.decrypt(file, known: nil, passphrase: { password }).plaintext
        else { return false }
        defer { wipe(&plaintext) }
        var restored: [Held] = []
        var offset = 0
        for entry in keys {
            guard offset + 4 <= plaintext.count else { return false }
            let count = plaintext[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard offset + count <= plaintext.count else { return false }
            var bytes = Array(plaintext[offset..<offset + count])
            defer { wipe(&bytes) }
            offset += count
            guard let key = try? SSHPrivateKey(file: bytes, passphrase: { () throws(SSHKeyError) in [] }) else {
                return false
            }
            if entry.expires.map({ $0 > now }) ?? true {
                restored.append(Held(key: key, confirm: entry.confirm, expires: entry.expires))
            }
        }
        sealed = nil
        held = restored
        lastUse = now
        return true
    }
}
