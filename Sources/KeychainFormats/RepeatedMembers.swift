/// A member given twice in one JSON object (`{"service":"prod","service":"test"}`). JSON leaves
/// its meaning open: Foundation's decoder takes the first, python and jq the last, so a file
/// checked with one tool would be read otherwise by another. A vault's item document refuses it
/// (import reads its JSON with ``JSONReader``, which refuses it too).
package struct RepeatedMember: Equatable, Sendable {
    /// The member's name, its escapes decoded.
    package var name: String
    /// The number (from 1) of the entry of the top-level `items` array that holds it; nil when
    /// it is elsewhere.
    package var item: Int?

    /// The first repeated member of the JSON text `bytes` (UTF-8), or nil when there is none, or
    /// when the text is not JSON (the decoder then says what is wrong).
    package static func first(in bytes: some Collection<UInt8>) -> RepeatedMember? {
        var scanner = Scanner(bytes: Array(bytes))
        return scanner.run()
    }

    fileprivate enum Frame {
        case object(names: Set<String>, expectingName: Bool, current: String?)
        case array(index: Int)
    }

    fileprivate struct Scanner {
        let bytes: [UInt8]
        var position = 0
        var stack: [Frame] = []

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func run() -> RepeatedMember? {
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "{"): stack.append(.object(names: [], expectingName: true, current: nil))
                case UInt8(ascii: "["): stack.append(.array(index: 0))
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard stack.popLast() != nil else { return nil }
                case UInt8(ascii: ","):
                    switch stack.last {
                    case .object(let names, _, let current):
                        stack[stack.count - 1] = .object(
                            names: names, expectingName: true, current: current)
                    case .array(let index): stack[stack.count - 1] = .array(index: index + 1)
                    case nil: return nil
                    }
                case UInt8(ascii: "\""):
                    guard let text = string() else { return nil }
                    guard case .object(var names, true, _) = stack.last else { continue }
                    guard names.insert(text).inserted else { return RepeatedMember(name: text, item: item()) }
                    stack[stack.count - 1] = .object(names: names, expectingName: false, current: text)
                default: continue  // white space, :, numbers, true, false, null
                }
            }
            return nil
        }

        /// The entry of the top-level "items" the scan is in: the document's object, its member
        /// "items", that array's index, and deeper.
        func item() -> Int? {
            guard stack.count >= 3, case .object(_, _, "items") = stack[0], case .array(let index) = stack[1] else {
                return nil
            }
            return index + 1
        }

        /// The string that starts at `position` (after its opening quote), escapes decoded; nil
        /// when it is not closed or an escape is malformed.
        mutating func string() -> String? {
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() {
                scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
                raw.removeAll()
            }
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "\"") {
                    flush()
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else {
                    raw.append(byte)
                    continue
                }
                guard position < bytes.count else { return nil }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "u"):
                    guard var value = hex4() else { return nil }
                    // A surrogate pair is one scalar.
                    if (0xD800..<0xDC00).contains(value), bytes[position...].starts(with: Array("\\u".utf8)) {
                        position += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    }
                    flush()
                    scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                default: raw.append(escape)  // \" \\ \/
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard position + 4 <= bytes.count,
                let value = UInt32(String(decoding: bytes[position..<(position + 4)], as: UTF8.self), radix: 16)
            else { return nil }
            position += 4
            return value
        }
    }
}
