import FoundationEssentials

/// Reads RFC 4251 fields (`byte`, `uint32`, `string`, `mpint`) in turn from a buffer, each read
/// failing with `.malformed` naming `context` when the buffer is too short.
struct SSHWireReader {
    var bytes: ArraySlice<UInt8>
    /// What is being read, for messages ("the signature", "the agent's answer").
    let context: String

    init(_ bytes: [UInt8], _ context: String) {
        self.bytes = bytes[...]
        self.context = context
    }

    var isEmpty: Bool { bytes.isEmpty }

    func truncated() -> SSHKeyError { .malformed("\(context) is truncated") }

    mutating func byte() throws(SSHKeyError) -> UInt8 {
        guard let first = bytes.first else { throw truncated() }
        bytes = bytes.dropFirst()
        return first
    }

    mutating func uint32() throws(SSHKeyError) -> UInt32 {
        guard bytes.count >= 4 else { throw truncated() }
        defer { bytes = bytes.dropFirst(4) }
        return bytes.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `count` raw bytes.
    mutating func raw(_ count: Int) throws(SSHKeyError) -> [UInt8] {
        guard count >= 0, bytes.count >= count else { throw truncated() }
        defer { bytes = bytes.dropFirst(count) }
        return Array(bytes.prefix(count))
    }

    mutating func string() throws(SSHKeyError) -> [UInt8] {
        let length = try uint32()
        guard bytes.count >= Int(length) else { throw truncated() }
        return try raw(Int(length))
    }

    /// A string that must be UTF-8 text.
    mutating func text() throws(SSHKeyError) -> String {
        let raw = try string()
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw .malformed("\(context) has a name that is not UTF-8")
        }
        return text
    }

    /// A non-negative `mpint`, its magnitude without leading zeros.
    mutating func positiveMPInt() throws(SSHKeyError) -> [UInt8] {
        let raw = try string()
        guard raw.first.map({ $0 & 0x80 == 0 }) ?? true else { throw .malformed("\(context) has a negative number") }
        return Array(raw.drop { $0 == 0 })
    }

    /// Fails unless everything was read.
    func end() throws(SSHKeyError) {
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

    /// Standard base64 with padding.
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// Strict standard base64 (padding required), or nil.
    static func decodeBase64(_ text: some StringProtocol) -> [UInt8]? {
        guard text.count % 4 == 0, let data = Data(base64Encoded: String(text)) else { return nil }
        return Array(data)
    }
}
