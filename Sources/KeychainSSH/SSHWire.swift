import FoundationEssentials
import KeychainSystem

/// Reads RFC 4251 fields (`byte`, `uint32`, `string`, `mpint`) in turn from a buffer, each read
/// failing with `.malformed` naming `context` when the buffer is too short.
package struct SSHWireReader {
    package var bytes: ArraySlice<UInt8>
    /// What is being read, for messages ("the signature", "the agent's answer").
    package let context: String

    package init(_ bytes: [UInt8], _ context: String) {
        self.bytes = bytes[...]
        self.context = context
    }

    package var isEmpty: Bool { bytes.isEmpty }

    package func truncated() -> SSHKeyError { .malformed("\(context) is truncated") }

    package mutating func byte() throws(SSHKeyError) -> UInt8 {
        guard let first = bytes.first else { throw truncated() }
        bytes = bytes.dropFirst()
        return first
    }

    package mutating func uint32() throws(SSHKeyError) -> UInt32 {
        guard bytes.count >= 4 else { throw truncated() }
        defer { bytes = bytes.dropFirst(4) }
        return bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `count` raw bytes.
    package mutating func raw(_ count: Int) throws(SSHKeyError) -> [UInt8] {
        guard count >= 0, bytes.count >= count else { throw truncated() }
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    package mutating func string() throws(SSHKeyError) -> [UInt8] {
        let length = try uint32()
        guard bytes.count >= Int(length) else { throw truncated() }
        return try raw(Int(length))
    }

    /// A string that must be UTF-8 text.
    package mutating func text() throws(SSHKeyError) -> String {
        let raw = try string()
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw .malformed("\(context) has a name that is not UTF-8")
        }
        return text
    }

    /// A non-negative `mpint`, its magnitude without leading zeros (the copy read is wiped: it
    /// may be a private key's).
    package mutating func positiveMPInt() throws(SSHKeyError) -> [UInt8] {
        var raw = try string()
        defer { wipe(&raw) }
        guard raw.first.map({ $0 & 0x80 == 0 }) ?? true else { throw .malformed("\(context) has a negative number") }
        return Array(raw.drop { $0 == 0 })
    }

    /// Fails unless everything was read.
    package func end() throws(SSHKeyError) {
        guard bytes.isEmpty else { throw .malformed("\(context) has \(bytes.count) bytes of trailing data") }
    }
}

/// Writes RFC 4251 fields.
enum SSHWire {
    static func uint32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    static func string(_ bytes: [UInt8]) -> [UInt8] { uint32(UInt32(bytes.count)) + bytes }

    static func string(_ text: String) -> [UInt8] { string(Array(text.utf8)) }

    /// The `mpint` of a non-negative number given as its big-endian magnitude: leading zeros
    /// dropped, one zero byte added when the top bit is set (RFC 4251 section 5).
    static func mpint(_ magnitude: some Collection<UInt8>) -> [UInt8] {
        var field: [UInt8] = []
        append(mpint: magnitude, to: &field)
        return field
    }

    /// Appends `bytes` as a `string` to `field`, with no copy in between (a private key's
    /// fields are written so, to leave no copy unwiped).
    static func append(string bytes: some Collection<UInt8>, to field: inout [UInt8]) {
        field += uint32(UInt32(bytes.count))
        field.append(contentsOf: bytes)
    }

    /// Appends the `mpint` of `magnitude` to `field`, with no copy in between.
    static func append(mpint magnitude: some Collection<UInt8>, to field: inout [UInt8]) {
        let digits = magnitude.drop { $0 == 0 }
        let negative = digits.first.map { $0 & 0x80 != 0 } ?? false
        field += uint32(UInt32(digits.count + (negative ? 1 : 0)))
        if negative { field.append(0) }
        field.append(contentsOf: digits)
    }

    /// `bytes` armoured as OpenSSH writes its keys: the BEGIN line, base64 in lines of 70
    /// columns, the END line, each ending in a newline. Built in bytes, its copies wiped, for a
    /// private key's.
    static func armor(_ bytes: [UInt8], label: String) -> [UInt8] {
        var data = Data(bytes)
        var base64 = data.base64EncodedData()
        defer {
            wipe(&data)
            wipe(&base64)
        }
        let (begin, end) = (Array("-----BEGIN \(label)-----\n".utf8), Array("-----END \(label)-----\n".utf8))
        var armored: [UInt8] = []
        armored.reserveCapacity(begin.count + base64.count + base64.count / 70 + 1 + end.count)
        armored += begin
        var line = base64.startIndex
        while line < base64.endIndex {
            let next = base64.index(line, offsetBy: 70, limitedBy: base64.endIndex) ?? base64.endIndex
            armored += base64[line..<next]
            armored.append(0x0a)
            line = next
        }
        armored += end
        return armored
    }

    /// Standard base64 with padding.
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// Strict standard base64 (padding required), or nil.
    static func decodeBase64(_ text: some StringProtocol) -> [UInt8]? {
        decodeBase64(bytes: Array(text.utf8))
    }

    /// Strict standard base64 (padding required) of ASCII `text`, decoded into an array of
    /// exactly its size, or nil: no intermediate copy is left for a secret's caller to miss.
    static func decodeBase64(bytes text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(text.count / 4 * 3)
        var index = 0
        while index < text.count {
            var quad: UInt32 = 0
            var padding = 0
            for offset in 0..<4 {
                let character = text[index + offset]
                let value: UInt32
                switch character {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
                case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
                case UInt8(ascii: "+"): value = 62
                case UInt8(ascii: "/"): value = 63
                case UInt8(ascii: "=") where index + 4 == text.count && offset >= 2:
                    padding += 1
                    value = 0
                default: return nil
                }
                // After a "=" only "=" may follow.
                if padding > 0 && character != UInt8(ascii: "=") { return nil }
                quad = quad << 6 | value
            }
            let bytes = [UInt8(quad >> 16 & 0xff), UInt8(quad >> 8 & 0xff), UInt8(quad & 0xff)]
            decoded += bytes.prefix(3 - padding)
            index += 4
        }
        return decoded
    }
}
