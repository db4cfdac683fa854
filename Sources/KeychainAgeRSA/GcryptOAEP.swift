import CLibGcrypt
import KeychainSystem

/// RSA-OAEP with SHA-256 and a label, by libgcrypt (swift-crypto's OAEP takes no label): the
/// keys and messages go in as canonical S-expressions, the results come out of them. The
/// buffers that hold a private exponent or a file key are wiped here; libgcrypt's own copies
/// are released when each call returns.
enum GcryptOAEP {
    /// libgcrypt initialised (its version check, which must come first), once per process.
    private static let ready: Void = { _ = gcry_check_version(nil) }()

    /// `message` encrypted to the RSA key (`n`, `e`: big-endian magnitudes), as many bytes as
    /// the modulus; nil when libgcrypt refuses (a message too long for the key).
    static func encrypt(_ message: [UInt8], n: [UInt8], e: [UInt8], label: [UInt8]) -> [UInt8]? {
        _ = ready
        var key = Sexp(capacity: n.count + e.count + 64)
        key.open("public-key", "rsa")
        key.element("n", number: n)
        key.element("e", number: e)
        key.close(2)
        var data = Sexp(capacity: message.count + label.count + 96)
        defer { data.erase() }
        data.open("data")
        data.element("flags", atom: Array("oaep".utf8))
        data.element("hash-algo", atom: Array("sha256".utf8))
        data.element("label", atom: label)
        data.element("value", atom: message)
        data.close(1)
        guard let ciphertext = run(data: data.bytes, key: key.bytes, encrypting: true, result: "a"),
            ciphertext.count <= n.count
        else { return nil }
        return [UInt8](repeating: 0, count: n.count - ciphertext.count) + ciphertext
    }

    /// The message `ciphertext` holds for the RSA key (`n`, `e`, `d`); nil when it does not
    /// decrypt (another key, altered or cut bytes, another label).
    static func decrypt(_ ciphertext: [UInt8], n: [UInt8], e: [UInt8], d: [UInt8], label: [UInt8]) -> [UInt8]? {
        _ = ready
        var key = Sexp(capacity: n.count + e.count + d.count + 96)
        defer { key.erase() }
        key.open("private-key", "rsa")
        key.element("n", number: n)
        key.element("e", number: e)
        key.element("d", number: d)
        key.close(2)
        var data = Sexp(capacity: ciphertext.count + label.count + 128)
        data.open("enc-val")
        data.element("flags", atom: Array("oaep".utf8))
        data.element("hash-algo", atom: Array("sha256".utf8))
        data.element("label", atom: label)
        data.open("rsa")
        data.element("a", number: ciphertext)
        data.close(2)
        return run(data: data.bytes, key: key.bytes, encrypting: false, result: "value")
    }

    /// gcry_pk_encrypt or gcry_pk_decrypt of `data` with `key`, and the data of the result's
    /// list named `result`.
    private static func run(data: [UInt8], key: [UInt8], encrypting: Bool, result name: String) -> [UInt8]? {
        guard let keySexp = sexp(key) else { return nil }
        defer { gcry_sexp_release(keySexp) }
        guard let dataSexp = sexp(data) else { return nil }
        defer { gcry_sexp_release(dataSexp) }
        var result: gcry_sexp_t?
        let error =
            encrypting ? gcry_pk_encrypt(&result, dataSexp, keySexp) : gcry_pk_decrypt(&result, dataSexp, keySexp)
        defer { gcry_sexp_release(result) }
        guard error == 0, let result, let token = gcry_sexp_find_token(result, name, 0) else { return nil }
        defer { gcry_sexp_release(token) }
        var length = 0
        guard let bytes = gcry_sexp_nth_data(token, 1, &length) else { return nil }
        return bytes.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    private static func sexp(_ bytes: [UInt8]) -> gcry_sexp_t? {
        var parsed: gcry_sexp_t?
        var offset = 0
        let error = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { gcry_sexp_sscan(&parsed, &offset, $0.baseAddress, $0.count) }
        }
        return error == 0 ? parsed : nil
    }
}

/// A canonical S-expression, written into one buffer reserved up front (so that a private key's
/// bytes are never left in a buffer outgrown): `(`, each element, `)`; an atom is its length in
/// decimal, `:`, its bytes.
private struct Sexp {
    var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    /// Opens a list named `name` in each of `names` in turn.
    mutating func open(_ names: String...) {
        for name in names {
            bytes.append(UInt8(ascii: "("))
            atom(Array(name.utf8))
        }
    }

    mutating func close(_ count: Int) { for _ in 0..<count { bytes.append(UInt8(ascii: ")")) } }

    /// `(NAME VALUE)`.
    mutating func element(_ name: String, atom value: [UInt8]) {
        open(name)
        atom(value)
        close(1)
    }

    /// `(NAME NUMBER)` of a non-negative number: its magnitude, after a zero byte when the top bit
    /// is set (so that it reads the same whether libgcrypt takes it as signed or unsigned).
    mutating func element(_ name: String, number magnitude: [UInt8]) {
        open(name)
        let padded = magnitude.first.map { $0 & 0x80 != 0 } ?? true
        bytes += Array("\(magnitude.count + (padded ? 1 : 0)):".utf8)
        if padded { bytes.append(0) }
        bytes += magnitude
        close(1)
    }

    private mutating func atom(_ value: [UInt8]) {
        bytes += Array("\(value.count):".utf8)
        bytes += value
    }

    mutating func erase() { wipe(&bytes) }
}
