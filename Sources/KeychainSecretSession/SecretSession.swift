internal import CLibGcrypt
import FoundationEssentials
import KeychainStore
import KeychainSystem

/// The encrypted transfer session of the Secret Service API, "dh-ietf1024-sha256-aes128-cbc-pkcs7":
/// a Diffie-Hellman exchange in the 1024-bit MODP group of RFC 2409 (generator 2), HKDF-SHA256 of
/// the shared value (zero-padded to 128 bytes; no salt, no info) into a 128-bit key, and every
/// secret sent as AES-128-CBC with PKCS#7 padding under a fresh 16-byte IV.
///
/// A shared value that begins with a zero byte is hashed two ways in the field: libsecret,
/// gnome-keyring and KeePassXC hash all 128 bytes, kwalletd5 (through QCA and OpenSSL's
/// `DH_compute_key`) hashes it without its leading zeros. No secret is sent in such a session
/// (it happens once in 256): the client opens another (``keyNotAgreed``). kwalletd5 also refuses a
/// public value shorter than 128 bytes, so ours is always sent zero-padded to 128, and misreads one
/// that begins with 0xFF, so ours never does (see ``KeyExchange/init(exponentBytes:)``).
///
/// libsecret opens the same session with a private exponent as long as the prime: two 1024-bit
/// exponentiations, the largest single cost of a whole `get` (measured with `perf`: most of the
/// process's CPU time is libgcrypt's). Ours is 256 bits, the usual short exponent for
/// a safe-prime group: RFC 3526 §8 asks for at least twice the group's strength, about 80 bits
/// here, and finding a 256-bit exponent by Pollard's lambda method takes about 2^128 steps, more
/// than breaking the 1024-bit group itself. The service sees the same messages either way.
///
/// Every primitive is libgcrypt's, the library libsecret uses for this session and which it loads
/// anyway. swift-crypto (the vault's cryptography) would do as well, but its generic wrappers
/// instantiate their metadata at run time: about 60 more page faults per `get` (perf stat: 665
/// against 608).
package struct SecretSession: Sendable {
    package static let algorithm = "dh-ietf1024-sha256-aes128-cbc-pkcs7"

    /// The prime of the Second Oakley Group (RFC 2409 §6.2), big-endian.
    package static let prime: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xC9, 0x0F, 0xDA, 0xA2, 0x21, 0x68, 0xC2, 0x34,
        0xC4, 0xC6, 0x62, 0x8B, 0x80, 0xDC, 0x1C, 0xD1, 0x29, 0x02, 0x4E, 0x08, 0x8A, 0x67, 0xCC, 0x74,
        0x02, 0x0B, 0xBE, 0xA6, 0x3B, 0x13, 0x9B, 0x22, 0x51, 0x4A, 0x08, 0x79, 0x8E, 0x34, 0x04, 0xDD,
        0xEF, 0x95, 0x19, 0xB3, 0xCD, 0x3A, 0x43, 0x1B, 0x30, 0x2B, 0x0A, 0x6D, 0xF2, 0x5F, 0x14, 0x37,
        0x4F, 0xE1, 0x35, 0x6D, 0x6D, 0x51, 0xC2, 0x45, 0xE4, 0x85, 0xB5, 0x76, 0x62, 0x5E, 0x7E, 0xC6,
        0xF4, 0x4C, 0x42, 0xE9, 0xA6, 0x37, 0xED, 0x6B, 0x0B, 0xFF, 0x5C, 0xB6, 0xF4, 0x06, 0xB7, 0xED,
        0xEE, 0x38, 0x6B, 0xFB, 0x5A, 0x89, 0x9F, 0xA5, 0xAE, 0x9F, 0x24, 0x11, 0x7C, 0x4B, 0x1F, 0xE6,
        0x49, 0x28, 0x66, 0x51, 0xEC, 0xE6, 0x53, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]
    package static let generator: [UInt8] = [2]
    /// The length of our private exponent.
    package static let exponentBytes = 32

    /// What ``key()`` throws when the shared value begins with a zero byte: the service may have
    /// derived another key (see above), so the caller opens a fresh session.
    package static let keyNotAgreed = KeychainError.backendFailure(
        detail: "the Secret Service and this client may not agree on the session's key (its shared value "
            + "begins with a zero byte, which kwalletd hashes differently)")

    /// The session's object path on the service, sent with every request for a secret.
    package let path: String
    /// The AES-128 key both sides derive, or what derives it: our half of the exchange and the
    /// service's public value, kept until the key is first needed, so that our second
    /// exponentiation can run while the first request in the
    /// session is under way (see ``deriveKey()``).
    private let state: Locked<KeyState>

    private enum KeyState {
        case pending(KeyExchange, peer: [UInt8])
        case derived([UInt8])
        case invalid
        case notAgreed
    }

    /// A session whose key is known.
    package init(path: String, key: [UInt8]) {
        self.path = path
        state = Locked(.derived(key))
    }

    /// A session whose key is derived from `exchange` and the service's `peer` value when first
    /// needed.
    package init(path: String, exchange: KeyExchange, peer: [UInt8]) {
        self.path = path
        state = Locked(.pending(exchange, peer: peer))
    }

    /// The AES-128 key both sides derived.
    /// - Throws: ``KeychainError/backendFailure(detail:)`` when the service's public value is one
    ///   no secret may be sent under (see ``KeyExchange/sharedKey(peer:)``), and ``keyNotAgreed``
    ///   when the shared value begins with a zero byte.
    package func key() throws -> [UInt8] {
        let key = state.withLock { state -> Result<[UInt8], KeychainError> in
            if case .pending(let exchange, let peer) = state {
                state =
                    switch exchange.sharedValue(peer: peer) {
                    case .none: .invalid
                    case .some(let shared) where shared[0] == 0: .notAgreed
                    case .some(let shared): .derived(KeyExchange.key(shared: shared))
                    }
            }
            switch state {
            case .derived(let key): return .success(key)
            case .notAgreed: return .failure(Self.keyNotAgreed)
            case .invalid, .pending:
                return .failure(
                    .backendFailure(
                        detail: "the Secret Service answered the session's key exchange with an invalid public value"))
            }
        }
        return try key.get()
    }

    /// Derives the key now if it is still pending: work for the time a request is under way.
    /// An invalid public value is reported by the next ``key()``.
    package func deriveKey() { _ = try? key() }

    /// One side of the exchange: a random private exponent and the public value sent to the peer.
    package struct KeyExchange: Sendable {
        let exponent: [UInt8]
        /// `generator ^ exponent mod prime`, big-endian without leading zeros, as gnome-keyring
        /// answers (``ProviderSession`` answers so).
        package let publicValue: [UInt8]
        /// The same value zero-padded to the prime's 128 bytes, as a client sends it: kwalletd5
        /// refuses a shorter one ("Client public key size is invalid"); gnome-keyring, KeePassXC and
        /// keychain-cli serve read either.
        package var paddedPublicValue: [UInt8] {
            [UInt8](repeating: 0, count: SecretSession.prime.count - publicValue.count) + publicValue
        }

        /// A new random exponent of `exponentBytes` bytes, drawn again while its public value
        /// begins with 0xFF: kwalletd5 reads the client's value as a signed number (QCA's
        /// `BigInteger`), and derives another key from such a one (measured: 7 sessions in 3,000
        /// decrypted under no key we could derive, each of them one whose value began with 0xFF;
        /// none in 6,000 without). One draw in 256, and it tells an eavesdropper nothing.
        package init(exponentBytes: Int = SecretSession.exponentBytes) {
            (exponent, publicValue) = Self.draw(exponentBytes)
        }

        /// The exchange for a given (nonzero) exponent.
        package init(exponent: [UInt8]) {
            self.exponent = exponent
            publicValue = Self.publicValue(of: exponent)
        }

        /// A random nonzero exponent whose public value does not begin with 0xFF, and that value.
        /// (One function, not loops in the initializer: Swift 6.3's optimizer crashed on
        /// nested repeat loops that assigned `self`.)
        private static func draw(_ exponentBytes: Int) -> (exponent: [UInt8], publicValue: [UInt8]) {
            while true {
                let exponent = SecretSession.randomBytes(exponentBytes)
                guard exponent.contains(where: { $0 != 0 }) else { continue }
                let value = publicValue(of: exponent)
                if value.count < SecretSession.prime.count || value[0] != 0xFF { return (exponent, value) }
            }
        }

        /// `generator ^ exponent mod prime` without leading zeros.
        private static func publicValue(of exponent: [UInt8]) -> [UInt8] {
            // The generator is in range, so there is always a value.
            Array(MultiPrecision.power(SecretSession.generator, exponent)!.drop { $0 == 0 })
        }

        /// The key for the peer's public value; nil when that value is outside 2 … prime − 2, where
        /// the shared value would be one an eavesdropper knows.
        package func sharedKey(peer: [UInt8]) -> [UInt8]? {
            sharedValue(peer: peer).map(Self.key(shared:))
        }

        /// `peer ^ exponent mod prime`, zero-padded to 128 bytes; nil as for ``sharedKey(peer:)``.
        package func sharedValue(peer: [UInt8]) -> [UInt8]? {
            MultiPrecision.power(peer, exponent)
        }

        /// The AES-128 key of a shared value: HKDF-SHA256 (RFC 5869) of all its 128 bytes, with no
        /// salt (a hash-length key of zeros) and no info, one block.
        package static func key(shared: [UInt8]) -> [UInt8] {
            let pseudorandomKey = Gcrypt.hmacSHA256(key: [UInt8](repeating: 0, count: 32), shared)
            return Array(Gcrypt.hmacSHA256(key: pseudorandomKey, [1]).prefix(16))
        }
    }

    /// `count` bytes from the system's generator (``fillWithSystemRandomBytes(_:)``). Not the
    /// vault's `AgeFile.randomBytes`, whose swift-crypto would start BoringSSL in every `get`.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        fillWithSystemRandomBytes(&bytes)
        return bytes
    }

    /// The plaintext of a secret the service sent in this session.
    /// - Throws: ``KeychainError/backendFailure(detail:)`` when it does not decrypt.
    package func decrypt(parameters: [UInt8], value: [UInt8]) throws -> Data {
        let key = try key()
        let failure = KeychainError.backendFailure(
            detail: "the Secret Service sent a secret that does not decrypt in the session it opened")
        guard parameters.count == 16, !value.isEmpty, value.count % 16 == 0,
            var padded = Gcrypt.aes128CBC(decrypting: value, key: key, iv: parameters)
        else { throw failure }
        defer { wipe(&padded) }
        // PKCS#7: the last byte n (1…16) says how many bytes of value n end the plaintext.
        let count = Int(padded[padded.count - 1])
        guard (1...16).contains(count), padded.suffix(count).allSatisfy({ $0 == UInt8(count) }) else { throw failure }
        return Data(padded.dropLast(count))
    }

    /// `(parameters, value)` as the service sends `secret` in this session: PKCS#7-padded, under a
    /// fresh random IV.
    package func encrypt(_ secret: Data) throws -> (parameters: [UInt8], value: [UInt8]) {
        let key = try key()
        let iv = Self.randomBytes(16)
        let count = 16 - secret.count % 16
        var padded = Array(secret) + [UInt8](repeating: UInt8(count), count: count)
        defer { wipe(&padded) }
        return (iv, Gcrypt.aes128CBC(encrypting: padded, key: key, iv: iv)!)
    }
}

/// The session's primitives from libgcrypt: HMAC-SHA256 and AES-128-CBC.
enum Gcrypt {
    /// libgcrypt must be told its version is acceptable before first use; libsecret does the same
    /// check, and neither side changes the library's global settings.
    package static let ready: Void = { _ = gcry_check_version(nil) }()

    /// HMAC-SHA256 of `message` under `key`.
    package static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        ready
        var handle: gcry_md_hd_t?
        let flags = GCRY_MD_FLAG_HMAC.rawValue | GCRY_MD_FLAG_SECURE.rawValue
        precondition(gcry_md_open(&handle, Int32(GCRY_MD_SHA256.rawValue), flags) == 0, "libgcrypt has no HMAC-SHA256")
        defer { gcry_md_close(handle) }
        precondition(gcry_md_setkey(handle, key, key.count) == 0, "libgcrypt refused an HMAC key")
        gcry_md_write(handle, message, message.count)
        return Array(UnsafeBufferPointer(start: gcry_md_read(handle, Int32(GCRY_MD_SHA256.rawValue)), count: 32))
    }

    /// `input` (whole 16-byte blocks) decrypted with AES-128-CBC, padding left in place.
    package static func aes128CBC(decrypting input: [UInt8], key: [UInt8], iv: [UInt8]) -> [UInt8]? {
        aes128CBC(input, key: key, iv: iv, decrypt: true)
    }

    /// `input` (whole 16-byte blocks, already padded) encrypted with AES-128-CBC.
    package static func aes128CBC(encrypting input: [UInt8], key: [UInt8], iv: [UInt8]) -> [UInt8]? {
        aes128CBC(input, key: key, iv: iv, decrypt: false)
    }

    private static func aes128CBC(_ input: [UInt8], key: [UInt8], iv: [UInt8], decrypt: Bool) -> [UInt8]? {
        ready
        guard key.count == 16, iv.count == 16, input.count % 16 == 0 else { return nil }
        var handle: gcry_cipher_hd_t?
        guard
            gcry_cipher_open(
                &handle, Int32(GCRY_CIPHER_AES.rawValue), Int32(GCRY_CIPHER_MODE_CBC.rawValue),
                UInt32(GCRY_CIPHER_SECURE.rawValue)) == 0
        else { return nil }
        defer { gcry_cipher_close(handle) }
        var output = [UInt8](repeating: 0, count: input.count)
        guard gcry_cipher_setkey(handle, key, key.count) == 0, gcry_cipher_setiv(handle, iv, iv.count) == 0 else {
            return nil
        }
        let status =
            decrypt
            ? gcry_cipher_decrypt(handle, &output, output.count, input, input.count)
            : gcry_cipher_encrypt(handle, &output, output.count, input, input.count)
        return status == 0 ? output : nil
    }
}

/// Exponentiation modulo the session's prime with libgcrypt's multi-precision integers.
enum MultiPrecision {
    /// `base ^ exponent mod SecretSession.prime`, big-endian and zero-padded to the prime's
    /// 128 bytes; nil when `base` is outside 2 … prime − 2.
    package static func power(_ base: [UInt8], _ exponent: [UInt8]) -> [UInt8]? {
        Gcrypt.ready
        let prime = scan(SecretSession.prime)
        let base = scan(base)
        // Secure memory keeps the exponent out of swap and makes libgcrypt take its constant-time path.
        let exponent = scan(exponent)
        gcry_mpi_set_flag(exponent, GCRYMPI_FLAG_SECURE)
        let limit = gcry_mpi_new(0)
        let result = gcry_mpi_snew(UInt32(SecretSession.prime.count * 8))
        defer {
            for number in [prime, base, exponent, limit, result] { gcry_mpi_release(number) }
        }
        gcry_mpi_sub_ui(limit, prime, 1)
        guard gcry_mpi_cmp_ui(base, 1) > 0, gcry_mpi_cmp(base, limit) < 0 else { return nil }
        gcry_mpi_powm(result, base, exponent, prime)
        var bytes = [UInt8](repeating: 0, count: SecretSession.prime.count)
        var written = 0
        let status = bytes.withUnsafeMutableBytes { buffer in
            gcry_mpi_print(GCRYMPI_FMT_USG, buffer.baseAddress, buffer.count, &written, result)
        }
        precondition(status == 0 && written <= bytes.count, "libgcrypt could not print a value below the prime")
        // Right-align: the shared value is hashed as exactly 128 bytes, as libsecret and gnome-keyring do.
        return [UInt8](repeating: 0, count: bytes.count - written) + bytes[..<written]
    }

    /// A new integer from big-endian bytes; the caller releases it.
    private static func scan(_ bytes: [UInt8]) -> gcry_mpi_t {
        if bytes.isEmpty { return gcry_mpi_new(0) }
        var number: gcry_mpi_t?
        let status = bytes.withUnsafeBytes { buffer in
            gcry_mpi_scan(&number, GCRYMPI_FMT_USG, buffer.baseAddress, buffer.count, nil)
        }
        precondition(status == 0, "libgcrypt could not read an unsigned integer")
        return number!
    }
}
