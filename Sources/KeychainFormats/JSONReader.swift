/// A strict JSON reader (RFC 8259): no comma before a closing bracket, no member twice in one
/// object (tools differ on which counts), no control character in a string, no unpaired
/// surrogate, no more than 200 levels of nesting.
package struct JSONReader {
    /// A step from a document's top down to one of its values: an object's member, a list's
    /// element (numbered from 0).
    package enum Step: Equatable, Sendable {
        case member(String)
        case element(Int)
    }

    /// What is wrong and on which line.
    package struct Failure: Error, Equatable {
        package var line: Int
        package var reason: String
        /// The name of a member given twice in one object, when that is what is wrong.
        package var repeated: String?
        /// Where the object or list at fault is: the steps from the top down to it (empty for the
        /// document itself).
        package var path: [Step] = []

        /// Whether what is wrong is a comma right before a closing bracket.
        package var isTrailingComma: Bool { reason == JSONReader.trailingComma }
    }

    static let trailingComma = "a comma before a closing bracket"

    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0
    /// The steps down to the value being read.
    private var path: [Step] = []
    private let firstLine: Int

    /// The value `text` holds, white space around it allowed; `firstLine` numbers its first line.
    package static func parse(_ text: Substring, firstLine: Int = 1) throws(Failure) -> JSONNode {
        var reader = JSONReader(bytes: Array(text.utf8), firstLine: firstLine)
        reader.skipSpace()
        let value = try reader.value()
        reader.skipSpace()
        guard reader.position == reader.bytes.count else { throw reader.failure("more follows the JSON value") }
        return value
    }

    private init(bytes: [UInt8], firstLine: Int) {
        self.bytes = bytes
        self.firstLine = firstLine
    }

    private func failure(_ reason: String, repeated: String? = nil) -> Failure {
        let line = bytes[..<min(position, bytes.count)].reduce(firstLine) { $0 + ($1 == 0x0A ? 1 : 0) }
        return Failure(line: line, reason: reason, repeated: repeated, path: path)
    }

    private mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    private mutating func value() throws(Failure) -> JSONNode {
        guard position < bytes.count else { throw failure("it ends before a value") }
        switch bytes[position] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            depth += 1
            defer { depth -= 1 }
            guard depth <= 200 else { throw failure("it nests more than 200 levels deep") }
            return bytes[position] == UInt8(ascii: "{") ? try object() : try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("a value is expected")
        }
    }

    private mutating func literal(_ word: String, _ value: JSONNode) throws(Failure) -> JSONNode {
        guard bytes[position...].starts(with: word.utf8) else { throw failure("a value is expected") }
        position += word.utf8.count
        return value
    }

    private mutating func object() throws(Failure) -> JSONNode {
        position += 1
        var members: [JSONNode.Member] = []
        var names: Set<String> = []
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object([])
        }
        while true {
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                let closing = position < bytes.count && bytes[position] == UInt8(ascii: "}")
                throw failure(closing ? Self.trailingComma : "a member name is expected")
            }
            let name = try string()
            guard names.insert(name).inserted else { throw failure("a field given twice", repeated: name) }
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                throw failure("a colon is expected")
            }
            position += 1
            skipSpace()
            path.append(.member(name))
            members.append(.init(name: name, value: try value()))
            path.removeLast()
            skipSpace()
            guard position < bytes.count else { throw failure("it ends inside an object") }
            position += 1
            if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
            guard bytes[position - 1] == UInt8(ascii: ",") else {
                position -= 1
                throw failure("a comma or a closing brace is expected")
            }
        }
    }

    private mutating func array() throws(Failure) -> JSONNode {
        position += 1
        var elements: [JSONNode] = []
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array([])
        }
        while true {
            skipSpace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                throw failure(Self.trailingComma)
            }
            path.append(.element(elements.count))
            elements.append(try value())
            path.removeLast()
            skipSpace()
            guard position < bytes.count else { throw failure("it ends inside a list") }
            position += 1
            if bytes[position - 1] == UInt8(ascii: "]") { return .array(elements) }
            guard bytes[position - 1] == UInt8(ascii: ",") else {
                position -= 1
                throw failure("a comma or a closing bracket is expected")
            }
        }
    }

    private mutating func number() throws(Failure) -> JSONNode {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                position += 1
            }
            return position - first
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let leadingZero = position < bytes.count && bytes[position] == UInt8(ascii: "0")
        let whole = digits()
        guard whole > 0, !(leadingZero && whole > 1) else { throw failure("a malformed number") }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw failure("a malformed number") }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() > 0 else { throw failure("a malformed number") }
        }
        return .number(String(decoding: bytes[start..<position], as: UTF8.self))
    }

    private mutating func string() throws(Failure) -> String {
        position += 1
        var out: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var value = try hex4()
                    if (0xD800..<0xDC00).contains(value) {
                        guard bytes[position...].starts(with: "\\u".utf8) else {
                            throw failure("an unpaired surrogate")
                        }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("an unpaired surrogate") }
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(value) else { throw failure("an unpaired surrogate") }
                    out += Array(String(Character(scalar)).utf8)
                default: throw failure("a malformed escape in a string")
                }
            case 0..<0x20: throw failure("a control character inside a string (write it as an escape)")
            default: out.append(byte)
            }
        }
        throw failure("a string is not closed")
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard position + 4 <= bytes.count,
            bytes[position..<(position + 4)].allSatisfy({ Character(Unicode.Scalar($0)).isHexDigit }),
            let value = UInt32(String(decoding: bytes[position..<(position + 4)], as: UTF8.self), radix: 16)
        else { throw failure("a malformed \\u escape") }
        position += 4
        return value
    }
}
