import Crypto
import Glibc
import KeychainSystem

/// OpenSSH's bcrypt_pbkdf (the KDF of passphrase-protected keys, PROTOCOL.key): PBKDF2's shape
/// with SHA-512 and bcrypt's Blowfish key schedule as the hash, its output bytes spread across
/// the derived key in stride, as OpenBSD's bcrypt_pbkdf.c defines it.
enum BcryptPBKDF {
    /// bcrypt_hash's 32-byte output for each round.
    private static let blockSize = 32

    static func derive(passphrase: [UInt8], salt: [UInt8], rounds: Int, count: Int) -> [UInt8] {
        precondition(rounds >= 1 && count >= 1 && count <= blockSize * blockSize)
        var key = [UInt8](repeating: 0, count: count)
        let stride = (count + blockSize - 1) / blockSize
        let amount = (count + stride - 1) / stride
        var hashedPassphrase = Array(SHA512.hash(data: passphrase))
        defer { wipe(&hashedPassphrase) }
        var remaining = count
        var block: UInt32 = 1
        while remaining > 0 {
            var hashedSalt = Array(SHA512.hash(data: salt + SSHWire.uint32(block)))
            var round = hash(passphrase: hashedPassphrase, salt: hashedSalt)
            var output = round
            for _ in 1..<rounds {
                hashedSalt = Array(SHA512.hash(data: round))
                round = hash(passphrase: hashedPassphrase, salt: hashedSalt)
                for index in output.indices { output[index] ^= round[index] }
            }
            var written = 0
            while written < min(amount, remaining) {
                let destination = written * stride + Int(block) - 1
                if destination >= count { break }
                key[destination] = output[written]
                written += 1
            }
            remaining -= written
            block += 1
            wipe(&round)
            wipe(&output)
            wipe(&hashedSalt)
        }
        return key
    }

    /// bcrypt_hash: Blowfish keyed expensively by the two 64-byte hashes, then
    /// "OxychromaticBlowfishSwatDynamite" enciphered 64 times; its words little-endian.
    static func hash(passphrase: [UInt8], salt: [UInt8]) -> [UInt8] {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: BlowfishTables.initial.count) { words in
            _ = words.initialize(from: BlowfishTables.initial)
            defer { explicit_bzero(words.baseAddress!, words.count * MemoryLayout<UInt32>.size) }
            let state = Blowfish(words: words)
            state.expand(key: passphrase, data: salt)
            for _ in 0..<64 {
                state.expand(key: salt, data: nil)
                state.expand(key: passphrase, data: nil)
            }
            let text = Array("OxychromaticBlowfishSwatDynamite".utf8)
            var cursor = 0
            var blocks = (0..<8).map { _ in Blowfish.word(text, &cursor) }
            for _ in 0..<64 {
                for pair in Swift.stride(from: 0, to: 8, by: 2) {
                    var (left, right) = (blocks[pair], blocks[pair + 1])
                    state.encipher(&left, &right)
                    (blocks[pair], blocks[pair + 1]) = (left, right)
                }
            }
            defer { blocks.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
            return blocks.flatMap {
                [UInt8($0 & 0xff), UInt8($0 >> 8 & 0xff), UInt8($0 >> 16 & 0xff), UInt8($0 >> 24)]
            }
        }
    }
}

/// Blowfish (Schneier, 1993) over a state the caller owns: the P-array (18 words) then the four
/// S-boxes (256 words each), as `BlowfishTables.initial` lays them out; the encipherment and
/// the key schedule bcrypt expands (with its salt, "data", folded in when given).
struct Blowfish {
    let words: UnsafeMutableBufferPointer<UInt32>

    /// The next 4 bytes of `bytes` as a big-endian word, cycling through them.
    static func word(_ bytes: [UInt8], _ cursor: inout Int) -> UInt32 {
        var word: UInt32 = 0
        for _ in 0..<4 {
            word = word << 8 | UInt32(bytes[cursor])
            cursor = (cursor + 1) % bytes.count
        }
        return word
    }

    @inline(__always)
    private func f(_ x: UInt32) -> UInt32 {
        let s = words.baseAddress! + 18
        return ((s[Int(x >> 24)] &+ s[256 + Int(x >> 16 & 0xff)]) ^ s[512 + Int(x >> 8 & 0xff)])
            &+ s[768 + Int(x & 0xff)]
    }

    func encipher(_ left: inout UInt32, _ right: inout UInt32) {
        let p = words.baseAddress!
        var (l, r) = (left ^ p[0], right)
        for index in Swift.stride(from: 1, to: 17, by: 2) {
            r ^= f(l) ^ p[index]
            l ^= f(r) ^ p[index + 1]
        }
        (left, right) = (r ^ p[17], l)
    }

    /// The key schedule: `key` folded into the P-array, then every P and S word replaced in turn
    /// by the encipherment of the block before, which takes in `data`'s next 8 bytes when given.
    func expand(key: [UInt8], data: [UInt8]?) {
        var cursor = 0
        for index in 0..<18 { words[index] ^= Self.word(key, &cursor) }
        var dataCursor = 0
        var (left, right): (UInt32, UInt32) = (0, 0)
        for index in Swift.stride(from: 0, to: words.count, by: 2) {
            if let data {
                left ^= Self.word(data, &dataCursor)
                right ^= Self.word(data, &dataCursor)
            }
            encipher(&left, &right)
            words[index] = left
            words[index + 1] = right
        }
    }
}
