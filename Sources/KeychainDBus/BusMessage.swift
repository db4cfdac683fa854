/// D-Bus messages in the wire format of the D-Bus specification ("Message Protocol"), the few
/// types the Secret Service client sends and reads: method calls and signals out (little-endian, as every client on this
/// machine sends them), replies and errors in (either byte order), each body's values read by
/// ``BusReader`` against the signature the message declares. Used by ``BusWire``, the session
/// bus connection that needs no GLib.
package enum BusMessage {
    package enum Kind: UInt8 {
        case methodCall = 1
        case methodReturn = 2
        case error = 3
        case signal = 4
    }

    /// A received message: its kind, the serial it answers (replies and errors), the error's
    /// name, who sent it and to whom, what it is about (a signal's path, interface and member), and its body
    /// with the signature it declares.
    package struct Received {
        package let kind: Kind?
        package let replySerial: UInt32?
        package let errorName: String?
        package let signature: String
        package let body: BusReader
        package var sender = ""
        package var path = ""
        package var interface = ""
        package var member = ""
        /// Who it is for: empty for a signal broadcast to every subscriber.
        package var destination = ""
        /// How many Unix descriptors came with it (`h` values index them), and, on a connection
        /// that takes them, the descriptors: the receiver's to close.
        package var descriptorCount = 0
        package var descriptors: [Int32] = []
    }

    /// The largest message the specification allows (2^27 bytes).
    package static let maximumLength = 1 << 27

    /// A method call with serial `serial` (or, `destination` nil, a signal to every listener);
    /// `signature` describes what `body` writes.
    package static func call(
        serial: UInt32, destination: String?, path: String, interface: String, member: String,
        signature: String = "", body: (inout BusWriter) -> Void = { _ in }
    ) -> [UInt8] {
        var content = BusWriter()
        body(&content)
        var message = BusWriter()
        message.bytes += [UInt8(ascii: "l"), (destination == nil ? Kind.signal : .methodCall).rawValue, 0, 1]
        message.uint32(UInt32(content.bytes.count))
        message.uint32(serial)
        // Header fields a(yv): PATH (o), INTERFACE (s), MEMBER (s), DESTINATION (s), SIGNATURE (g).
        message.array(alignment: 8) { fields in
            fields.field(1, "o") { $0.string(path) }
            fields.field(2, "s") { $0.string(interface) }
            fields.field(3, "s") { $0.string(member) }
            if let destination { fields.field(6, "s") { $0.string(destination) } }
            if !signature.isEmpty { fields.field(8, "g") { $0.signature(signature) } }
        }
        message.align(8)
        return message.bytes + content.bytes
    }

    /// The length of the message at the start of `bytes` once its fixed header (16 bytes) is
    /// there: nil before that; throws for a header that is not D-Bus's or a message too long.
    package static func length(_ bytes: ArraySlice<UInt8>) throws(DBusError) -> Int? {
        guard bytes.count >= 16 else { return nil }
        var header = try BusReader(bytes.prefix(16), endian: bytes.first!)
        header.position = 4
        let body = Int(try header.uint32())
        header.position = 12
        let fields = Int(try header.uint32())
        let length = (16 + fields + 7) / 8 * 8 + body
        guard body <= maximumLength, fields <= maximumLength, length <= maximumLength else {
            throw .malformed
        }
        return length
    }

    /// Reads a whole message (``length(_:)`` bytes).
    package static func parse(_ bytes: ArraySlice<UInt8>) throws(DBusError) -> Received {
        var reader = try BusReader(bytes, endian: bytes.first!)
        reader.position = 1
        let kind = Kind(rawValue: try reader.byte())
        reader.position = 12
        var replySerial: UInt32?
        var errorName: String?
        var signature = ""
        var (sender, path, interface, member, destination) = ("", "", "", "", "")
        var descriptorCount = 0
        let fieldsEnd = Int(try reader.uint32()) + 16
        while reader.position < fieldsEnd {
            reader.align(8)
            let code = try reader.byte()
            let type = try reader.signature()
            // Codes: PATH 1, INTERFACE 2, MEMBER 3, ERROR_NAME 4, REPLY_SERIAL 5, DESTINATION 6,
            // SENDER 7, SIGNATURE 8, UNIX_FDS 9.
            switch (code, type) {
            case (9, "u"): descriptorCount = Int(try reader.uint32())
            case (5, "u"): replySerial = try reader.uint32()
            case (4, "s"): errorName = try reader.string()
            case (8, "g"): signature = try reader.signature()
            case (1, "o"): path = try reader.string()
            case (2, "s"): interface = try reader.string()
            case (3, "s"): member = try reader.string()
            case (6, "s"): destination = try reader.string()
            case (7, "s"): sender = try reader.string()
            case (_, "s"), (_, "o"): _ = try reader.string()
            case (_, "g"): _ = try reader.signature()
            case (_, "u"): _ = try reader.uint32()
            default: throw .malformed
            }
        }
        guard reader.position == fieldsEnd else { throw .malformed }
        reader.align(8)
        return Received(
            kind: kind, replySerial: replySerial, errorName: errorName, signature: signature,
            body: reader.rest(), sender: sender, path: path, interface: interface, member: member,
            destination: destination, descriptorCount: descriptorCount)
    }

}

/// Writes D-Bus values, aligned from the start of the message (or of a body, which starts aligned).
package struct BusWriter {
    package var bytes: [UInt8] = []

    package mutating func align(_ alignment: Int) {
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    package mutating func uint32(_ value: UInt32) {
        align(4)
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

    /// A string or an object path (`s`, `o`).
    package mutating func string(_ value: String) {
        uint32(UInt32(value.utf8.count))
        bytes += value.utf8
        bytes.append(0)
    }

    package mutating func signature(_ value: String) {
        bytes.append(UInt8(value.utf8.count))
        bytes += value.utf8
        bytes.append(0)
    }

    /// An array whose elements `elements` writes, aligned to `alignment` (8 for structs and dict entries).
    package mutating func array(alignment: Int, _ elements: (inout BusWriter) -> Void) {
        uint32(0)
        let lengthAt = bytes.count - 4
        align(alignment)
        let start = bytes.count
        elements(&self)
        withUnsafeBytes(of: UInt32(bytes.count - start).littleEndian) {
            bytes.replaceSubrange(lengthAt..<lengthAt + 4, with: $0)
        }
    }

    package mutating func boolean(_ value: Bool) { uint32(value ? 1 : 0) }

    /// An `a{ss}`: a dictionary of strings.
    package mutating func stringDictionary(_ pairs: some Sequence<(String, String)>) {
        array(alignment: 8) { entries in
            for (key, value) in pairs {
                entries.align(8)
                entries.string(key)
                entries.string(value)
            }
        }
    }

    /// An `ay`.
    package mutating func byteArray(_ value: [UInt8]) {
        uint32(UInt32(value.count))
        bytes += value
    }

    /// A header field `(yv)` with code `code` and a value of signature `type`.
    fileprivate mutating func field(_ code: UInt8, _ type: String, _ value: (inout BusWriter) -> Void) {
        align(8)
        bytes.append(code)
        signature(type)
        value(&self)
    }
}

/// Reads D-Bus values; every read checks its bounds and throws ``DBusError/malformed`` past them.
package struct BusReader {
    private let bytes: ArraySlice<UInt8>
    private let bigEndian: Bool
    /// The offset from the start of the message.
    package var position: Int

    package init(_ bytes: ArraySlice<UInt8>, endian: UInt8) throws(DBusError) {
        guard endian == UInt8(ascii: "l") || endian == UInt8(ascii: "B") else { throw .malformed }
        (self.bytes, bigEndian, position) = (bytes, endian == UInt8(ascii: "B"), 0)
    }

    /// What is left to read, alignment kept (the offsets stay the message's).
    fileprivate func rest() -> BusReader { self }

    package var atEnd: Bool { position >= bytes.count }

    package mutating func align(_ alignment: Int) {
        position = (position + alignment - 1) / alignment * alignment
    }

    private mutating func take(_ count: Int) throws(DBusError) -> ArraySlice<UInt8> {
        guard count >= 0, position + count <= bytes.count else { throw .malformed }
        defer { position += count }
        let start = bytes.startIndex + position
        return bytes[start..<start + count]
    }

    package mutating func byte() throws(DBusError) -> UInt8 { try take(1).first! }

    /// Skips a value of `count` bytes aligned to `alignment`.
    package mutating func skip(_ count: Int, aligned alignment: Int) throws(DBusError) {
        align(alignment)
        _ = try take(count)
    }

    package mutating func uint32() throws(DBusError) -> UInt32 {
        align(4)
        let value = try take(4).reduce(0) { ($0 << 8) | UInt32($1) }
        return bigEndian ? value : value.byteSwapped
    }

    package mutating func uint64() throws(DBusError) -> UInt64 {
        align(8)
        let value = try take(8).reduce(0) { ($0 << 8) | UInt64($1) }
        return bigEndian ? value : value.byteSwapped
    }

    package mutating func boolean() throws(DBusError) -> Bool {
        switch try uint32() {
        case 0: return false
        case 1: return true
        default: throw .malformed
        }
    }

    /// A string or an object path: valid UTF-8 with its terminating NUL.
    package mutating func string() throws(DBusError) -> String {
        let count = Int(try uint32())
        return try terminated(count)
    }

    package mutating func signature() throws(DBusError) -> String {
        try terminated(Int(try byte()))
    }

    private mutating func terminated(_ count: Int) throws(DBusError) -> String {
        let text = try take(count)
        guard try byte() == 0, !text.contains(0), let value = String(validating: text, as: UTF8.self) else {
            throw .malformed
        }
        return value
    }

    package mutating func byteArray() throws(DBusError) -> [UInt8] {
        Array(try take(Int(try uint32())))
    }

    /// An `ao`.
    package mutating func objectPaths() throws(DBusError) -> [String] {
        let end = Int(try uint32()) + position
        var paths: [String] = []
        while position < end { paths.append(try string()) }
        guard position == end else { throw .malformed }
        return paths
    }
}
