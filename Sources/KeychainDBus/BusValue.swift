internal import CLibSecret

/// A D-Bus value of the types the Secret Service speaks, whichever way it travels: written and
/// read on our own wire (``BusWriter``, ``BusReader``) or built and read as a GVariant for GDBus.
/// One value type for both is what lets a call be written once for either connection.
package enum BusValue: Equatable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case uint32(UInt32)
    case uint64(UInt64)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`, kept as bytes rather than an array of `.byte`.
    case bytes([UInt8])
    /// An array of values of signature `element` (which an empty array needs).
    case array(element: String, [BusValue])
    /// A dictionary `a{KV}`: its entries in order, as the wire keeps them.
    case dictionary(key: String, value: String, [Entry])
    case structure([BusValue])
    indirect case variant(BusValue)
    /// A value of a basic type the Secret Service does not use (an integer of another width, a
    /// double, a descriptor's index), read and skipped: its signature only. Never sent.
    case other(String)

    package struct Entry: Equatable, Sendable {
        package let key: BusValue
        package let value: BusValue

        package init(_ key: BusValue, _ value: BusValue) { (self.key, self.value) = (key, value) }
    }

    /// An `a{ss}` of `pairs`.
    package static func strings(_ pairs: some Sequence<(String, String)>) -> BusValue {
        .dictionary(key: "s", value: "s", pairs.map { Entry(.string($0.0), .string($0.1)) })
    }

    /// Its D-Bus signature.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .uint32: "u"
        case .uint64: "t"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        case .other(let signature): signature
        }
    }

    /// The pairs of an `a{ss}`, nil for anything else.
    package var stringMap: [String: String]? {
        guard case .dictionary("s", "s", let entries) = self else { return nil }
        var pairs: [String: String] = [:]
        for entry in entries {
            guard case .string(let key) = entry.key, case .string(let value) = entry.value else { return nil }
            pairs[key] = value
        }
        return pairs
    }

    /// The strings of an `as` or `ao`, nil for anything else.
    package var strings: [String]? {
        guard case .array(_, let elements) = self else { return nil }
        return elements.compactMap {
            switch $0 {
            case .string(let text), .objectPath(let text): text
            default: nil
            }
        }
    }
}

/// The alignment of a value whose signature starts with `code` (the specification's table).
func busAlignment(of code: UInt8) -> Int {
    switch code {
    case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): 1
    case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
    case UInt8(ascii: "t"), UInt8(ascii: "x"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
    default: 4
    }
}

extension BusWriter {
    /// Writes `value`, aligned as its type requires.
    package mutating func value(_ value: BusValue) {
        switch value {
        case .other: preconditionFailure("a value read but not modelled is never sent")
        case .byte(let byte): bytes.append(byte)
        case .boolean(let flag): boolean(flag)
        case .uint32(let number): uint32(number)
        case .uint64(let number):
            align(8)
            withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
        case .string(let text), .objectPath(let text): string(text)
        case .signature(let text): signature(text)
        case .bytes(let data): byteArray(data)
        case .array(let element, let elements):
            array(alignment: busAlignment(of: element.utf8.first ?? 0)) { writer in
                for element in elements { writer.value(element) }
            }
        case .dictionary(_, _, let entries):
            array(alignment: 8) { writer in
                for entry in entries {
                    writer.align(8)
                    writer.value(entry.key)
                    writer.value(entry.value)
                }
            }
        case .structure(let fields):
            align(8)
            for field in fields { self.value(field) }
        case .variant(let inner):
            signature(inner.signature)
            self.value(inner)
        }
    }
}

extension BusReader {
    /// Reads every value of `signature` (a message body's), in order.
    package mutating func values(_ signature: String) throws(DBusError) -> [BusValue] {
        var types = Substring(signature)
        var values: [BusValue] = []
        while !types.isEmpty { values.append(try value(&types, depth: 0)) }
        return values
    }

    /// Reads one value of the single complete type at the start of `types`, which it consumes.
    /// Nesting deeper than the specification's 64 levels is malformed.
    private mutating func value(_ types: inout Substring, depth: Int) throws(DBusError) -> BusValue {
        guard depth < 64, let code = types.utf8.first else { throw .malformed }
        types = types.dropFirst()
        switch code {
        case UInt8(ascii: "y"): return .byte(try byte())
        case UInt8(ascii: "b"): return .boolean(try boolean())
        case UInt8(ascii: "u"): return .uint32(try uint32())
        case UInt8(ascii: "t"): return .uint64(try uint64())
        case UInt8(ascii: "s"): return .string(try string())
        case UInt8(ascii: "o"): return .objectPath(try string())
        case UInt8(ascii: "g"): return .signature(try signature())
        case UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"), UInt8(ascii: "h"), UInt8(ascii: "x"),
            UInt8(ascii: "d"):
            let size = busAlignment(of: code)
            try skip(size, aligned: size)
            return .other(String(UnicodeScalar(code)))
        case UInt8(ascii: "v"):
            var inner = Substring(try signature())
            let value = try value(&inner, depth: depth + 1)
            guard inner.isEmpty else { throw .malformed }
            return .variant(value)
        case UInt8(ascii: "("):
            align(8)
            var fields: [BusValue] = []
            while types.utf8.first != UInt8(ascii: ")") { fields.append(try value(&types, depth: depth + 1)) }
            types = types.dropFirst()
            return .structure(fields)
        case UInt8(ascii: "a"):
            return try array(&types, depth: depth)
        default:
            throw .malformed
        }
    }

    /// An array whose element type starts `types` (after its `a`).
    private mutating func array(_ types: inout Substring, depth: Int) throws(DBusError) -> BusValue {
        guard let first = types.utf8.first else { throw .malformed }
        if first == UInt8(ascii: "y") {
            types = types.dropFirst()
            return .bytes(try byteArray())
        }
        let length = Int(try uint32())
        align(busAlignment(of: first))
        let end = position + length
        guard length <= BusMessage.maximumLength else { throw .malformed }
        if first == UInt8(ascii: "{") {
            types = types.dropFirst()
            let keyTypes = types
            var entryTypes = types
            _ = try Self.skipType(&entryTypes)
            let keySignature = String(keyTypes[..<entryTypes.startIndex])
            let valueStart = entryTypes
            _ = try Self.skipType(&entryTypes)
            let valueSignature = String(valueStart[..<entryTypes.startIndex])
            guard entryTypes.utf8.first == UInt8(ascii: "}") else { throw .malformed }
            types = entryTypes.dropFirst()
            var entries: [BusValue.Entry] = []
            while position < end {
                align(8)
                var key = Substring(keySignature)
                var value = Substring(valueSignature)
                entries.append(.init(try self.value(&key, depth: depth + 1), try self.value(&value, depth: depth + 1)))
            }
            guard position == end else { throw .malformed }
            return .dictionary(key: keySignature, value: valueSignature, entries)
        }
        let elementStart = types
        _ = try Self.skipType(&types)
        let element = String(elementStart[..<types.startIndex])
        var elements: [BusValue] = []
        while position < end {
            var one = Substring(element)
            elements.append(try value(&one, depth: depth + 1))
        }
        guard position == end else { throw .malformed }
        return .array(element: element, elements)
    }

    /// Consumes one single complete type at the start of `types`.
    private static func skipType(_ types: inout Substring) throws(DBusError) {
        guard let code = types.utf8.first else { throw .malformed }
        types = types.dropFirst()
        switch code {
        case UInt8(ascii: "a"): try skipType(&types)
        case UInt8(ascii: "("), UInt8(ascii: "{"):
            let close = code == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
            while types.utf8.first != close { try skipType(&types) }
            types = types.dropFirst()
        default: break
        }
    }
}
