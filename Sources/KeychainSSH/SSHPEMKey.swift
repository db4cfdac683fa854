import Crypto
import CryptoExtras
import FoundationEssentials
import KeychainSystem

/// An unencrypted PEM private key, as `ssh-keygen -m PEM` or `-m PKCS8` writes one:
/// `BEGIN RSA PRIVATE KEY` (PKCS#1), `BEGIN EC PRIVATE KEY` (SEC1) or `BEGIN PRIVATE KEY`
/// (PKCS#8: RSA, ECDSA or ed25519), read by swift-crypto. An encrypted one (`Proc-Type:
/// 4,ENCRYPTED`, `BEGIN ENCRYPTED PRIVATE KEY`) is refused with how to convert it.
enum SSHPEMKey {
    /// The labels of the BEGIN lines read, the encrypted PKCS#8 one last (refused, but a key).
    static let labels = ["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY"]

    /// Why an encrypted PEM key is not opened, and what to do instead.
    static let encrypted = SSHKeyError.unsupported(
        "an encrypted PEM private key (convert it to OpenSSH's format: ssh-keygen -p -f FILE rewrites it so)")

    /// The label of the first PEM private key BEGIN line in `file`, or nil.
    static func label(_ file: [UInt8]) -> String? {
        for line in lines(file) {
            guard line.starts(with: "-----BEGIN ".utf8) else { continue }
            if let label = labels.first(where: { line.elementsEqual("-----BEGIN \($0)-----".utf8) }) { return label }
        }
        return nil
    }

    /// `file`'s lines, blanks trimmed at both ends.
    private static func lines(_ file: [UInt8]) -> [ArraySlice<UInt8>] {
        file.split(whereSeparator: { $0 == 0x0a || $0 == 0x0d }).map { line in
            let start = line.firstIndex(where: { $0 > 0x20 }) ?? line.endIndex
            let end = line.lastIndex(where: { $0 > 0x20 }).map { $0 + 1 } ?? start
            return line[start..<max(start, end)]
        }
    }

    /// Whether `file` is a PEM private key that is encrypted.
    static func isEncrypted(_ file: [UInt8]) throws(SSHKeyError) -> Bool {
        try block(file).encrypted
    }

    /// The DER bytes of the PEM block (secret: the caller wipes them), and whether it is encrypted.
    private static func block(_ file: [UInt8]) throws(SSHKeyError) -> (label: String, der: [UInt8], encrypted: Bool) {
        guard file.count <= 64 * 1024 else { throw .malformed("the private key file is over 64 KiB") }
        let lines = lines(file)
        guard let label = label(file),
            let first = lines.firstIndex(where: { $0.elementsEqual("-----BEGIN \(label)-----".utf8) }),
            let last = lines[first...].firstIndex(where: { $0.elementsEqual("-----END \(label)-----".utf8) })
        else { throw .malformed("the PEM private key has no BEGIN and END lines of one label") }
        let body = lines[(first + 1)..<last]
        let headers = body.filter { $0.contains(UInt8(ascii: ":")) }
        let encrypted =
            label == "ENCRYPTED PRIVATE KEY"
            || headers.contains { String(decoding: $0, as: UTF8.self).hasPrefix("Proc-Type:") }
        if encrypted { return (label, [], true) }
        guard headers.isEmpty else { throw .malformed("the PEM private key has headers") }
        var base64 = Data(body.joined())
        defer { wipe(&base64) }
        guard var decoded = Data(base64Encoded: base64) else { throw .malformed("the PEM private key is not base64") }
        defer { wipe(&decoded) }
        return (label, Array(decoded), false)
    }

    /// The key of an unencrypted PEM file.
    static func material(_ file: [UInt8]) throws(SSHKeyError) -> SSHKeyMaterial {
        var (label, der, encrypted) = try block(file)
        defer { wipe(&der) }
        if encrypted { throw Self.encrypted }
        if label != "RSA PRIVATE KEY" {
            // Each curve's scalar has its own size, which swift-crypto requires: one fits.
            if let key = try? P256.Signing.PrivateKey(derRepresentation: der) { return .p256(key) }
            if let key = try? P384.Signing.PrivateKey(derRepresentation: der) { return .p384(key) }
            if let key = try? P521.Signing.PrivateKey(derRepresentation: der) { return .p521(key) }
            if label == "PRIVATE KEY", let key = try? Curve25519.Signing.PrivateKey(derRepresentation: der) {
                return .ed25519(key)
            }
        }
        guard label != "EC PRIVATE KEY", let key = try? _RSA.Signing.PrivateKey(unsafeDERRepresentation: der)
        else { throw .malformed("the PEM private key is not an ed25519, ECDSA (P-256/384/521) or RSA key") }
        // Rebuilt from its numbers: the one path, with its size limit and checks, RSA keys take.
        var numbers = try RSANumbers(pkcs1: key)
        defer { numbers.erase() }
        return try .rsa(n: numbers.n, e: numbers.e, d: numbers.d, iqmp: numbers.iqmp, p: numbers.p, q: numbers.q)
    }
}

/// An RSA private key's numbers (magnitudes, without leading zeros), read from swift-crypto's
/// PKCS#1 DER of it (RFC 8017 A.1.2): what OpenSSH stores of the key is there, iqmp included.
struct RSANumbers {
    var n: [UInt8] = []
    var e: [UInt8] = []
    var d: [UInt8] = []
    var p: [UInt8] = []
    var q: [UInt8] = []
    var iqmp: [UInt8] = []

    init(pkcs1 key: _RSA.Signing.PrivateKey) throws(SSHKeyError) {
        // A copy of our own to wipe: the Data swift-crypto returns can share the key's storage.
        var der = Array(key.derRepresentation)
        defer { wipe(&der) }
        var outer = DERReader(der[...])
        var sequence = DERReader(try outer.element(tag: 0x30))
        try outer.end()
        guard try sequence.integer().isEmpty else { throw .unsupported("multi-prime RSA keys") }
        var exponents: [[UInt8]] = [[], []]
        defer { for index in exponents.indices { wipe(&exponents[index]) } }
        n = try sequence.integer()
        e = try sequence.integer()
        d = try sequence.integer()
        p = try sequence.integer()
        q = try sequence.integer()
        exponents[0] = try sequence.integer()  // d mod (p-1), d mod (q-1): OpenSSH keeps neither
        exponents[1] = try sequence.integer()
        iqmp = try sequence.integer()
        try sequence.end()
    }

    /// Wipes the private numbers.
    mutating func erase() {
        wipe(&d)
        wipe(&p)
        wipe(&q)
        wipe(&iqmp)
    }
}

/// Reads DER elements of definite length, as swift-crypto writes them.
private struct DERReader {
    var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    static let malformed = SSHKeyError.malformed("the RSA private key's DER is malformed")

    /// The contents of the next element, which must have `tag`.
    mutating func element(tag: UInt8) throws(SSHKeyError) -> ArraySlice<UInt8> {
        guard bytes.count >= 2, bytes.first == tag else { throw Self.malformed }
        var index = bytes.startIndex + 1
        var length = Int(bytes[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard (1...3).contains(count), bytes.endIndex - index >= count else { throw Self.malformed }
            length = bytes[index..<(index + count)].reduce(0) { $0 << 8 | Int($1) }
            index += count
        }
        guard bytes.endIndex - index >= length else { throw Self.malformed }
        defer { bytes = bytes[(index + length)...] }
        return bytes[index..<(index + length)]
    }

    /// A non-negative INTEGER's magnitude without leading zeros.
    mutating func integer() throws(SSHKeyError) -> [UInt8] {
        let contents = try element(tag: 0x02)
        guard let first = contents.first, first & 0x80 == 0 else { throw Self.malformed }
        return Array(contents.drop { $0 == 0 })
    }

    func end() throws(SSHKeyError) {
        guard bytes.isEmpty else { throw Self.malformed }
    }
}
