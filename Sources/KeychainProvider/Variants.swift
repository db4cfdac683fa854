internal import CLibSecret
import KeychainDBus

// GVariant values for the provider's replies and the readers of its arguments, each value one
// of ours (OwnedVariant): a handler that throws halfway drops what it built. g_variant_new is
// variadic, so values are built from parts.
enum Variant {
    static func string(_ text: String) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_string(text)) }
    static func boolean(_ value: Bool) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_boolean(value ? 1 : 0)) }
    static func uint32(_ value: UInt32) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_uint32(guint32(value))) }
    static func uint64(_ value: UInt64) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_uint64(guint64(value))) }
    static func objectPath(_ path: String) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_object_path(path)) }
    static func bytes(_ bytes: [UInt8]) -> OwnedVariant { OwnedVariant(sinking: byteArrayVariant(bytes)) }
    static func boxed(_ value: OwnedVariant) -> OwnedVariant { OwnedVariant(sinking: g_variant_new_variant(value.raw)) }
    /// An empty `as`.
    static func noStrings() -> OwnedVariant { OwnedVariant(sinking: g_variant_new_strv(nil, 0)) }

    static func tuple(_ children: [OwnedVariant]) -> OwnedVariant { OwnedVariant.tuple(children) }

    static func array(of type: OpaquePointer, _ children: [OwnedVariant]) -> OwnedVariant {
        withExtendedLifetime(children) {
            var raw: [OpaquePointer?] = children.map(\.raw)
            return OwnedVariant(sinking: g_variant_new_array(type, &raw, gsize(raw.count)))
        }
    }

    static func entry(_ key: OwnedVariant, _ value: OwnedVariant) -> OwnedVariant {
        withExtendedLifetime((key, value)) { OwnedVariant(sinking: g_variant_new_dict_entry(key.raw, value.raw)) }
    }

    static func objectPaths(_ paths: [String]) -> OwnedVariant {
        array(of: keychain_cli_type_object_path(), paths.map(objectPath))
    }

    static func stringMap(_ map: [String: String]) -> OwnedVariant {
        array(
            of: keychain_cli_type_string_pair(),
            map.sorted { $0.key < $1.key }.map { entry(string($0.key), string($0.value)) })
    }

    static func propertyMap(_ map: [(String, OwnedVariant)]) -> OwnedVariant {
        array(of: keychain_cli_type_property_pair(), map.map { entry(string($0.0), boxed($0.1)) })
    }

    /// A secret struct `(oayays)`: session, parameters, value, content type.
    static func secret(session: String, parameters: [UInt8], value: [UInt8], contentType: String) -> OwnedVariant {
        tuple([objectPath(session), bytes(parameters), bytes(value), string(contentType)])
    }

    // MARK: Reading arguments

    /// The strings (or object paths) of an `as` or `ao`.
    static func texts(_ array: OwnedVariant) -> [String] { array.children.map(\.string) }

    /// The pairs of an `a{ss}`.
    static func strings(_ map: OwnedVariant) -> [String: String] {
        var result: [String: String] = [:]
        for entry in map.children { result[entry.child(0).string] = entry.child(1).string }
        return result
    }

    /// The entries of an `a{sv}`, each value unboxed.
    static func properties(_ map: OwnedVariant) -> [String: OwnedVariant] {
        var result: [String: OwnedVariant] = [:]
        for entry in map.children { result[entry.child(0).string] = entry.child(1).unboxed }
        return result
    }

    /// Whether `value` is of the type `signature` names.
    static func has(_ value: OwnedVariant, type signature: OpaquePointer) -> Bool {
        g_variant_is_of_type(value.raw, signature) != 0
    }

    // MARK: D-Bus's limits

    /// The largest array, and the largest message, D-Bus allows: dbus-daemon drops the
    /// connection of a process that sends more.
    static let largestArray = 1 << 26
    static let largestMessage = 1 << 27

    /// Whether `body`, sent as a message's body, keeps within D-Bus's limits: no array of more than
    /// 64 MiB, and the whole message (with room for its header) within 128 MiB. Counted as D-Bus
    /// encodes it, with its padding and lengths, not as GVariant does.
    static func fitsInMessage(_ body: OwnedVariant) -> Bool {
        var size = WireSize()
        size.add(body)
        return size.fits && size.offset <= largestMessage - (64 << 10)
    }
}

/// The bytes a value takes in a D-Bus message, counted as the specification encodes it.
private struct WireSize {
    var offset = 0
    /// False once an array is over ``Variant/largestArray``.
    var fits = true

    mutating func add(_ value: OwnedVariant) {
        let type = value.typeString
        let code = type.utf8.first!
        if let fixed = Self.fixedSize(code) {
            align(fixed)
            offset += fixed
            return
        }
        switch code {
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            align(4)
            offset += 4 + Int(g_variant_get_size(value.raw))  // the length, the text, its NUL
        case UInt8(ascii: "g"):
            offset += 1 + Int(g_variant_get_size(value.raw))
        case UInt8(ascii: "v"):
            let inner = value.unboxed
            offset += 2 + inner.typeString.utf8.count
            add(inner)
        case UInt8(ascii: "a"):
            align(4)
            offset += 4
            let element = type.utf8.dropFirst().first!
            align(Self.alignment(element))
            let start = offset
            let count = value.count
            if let fixed = Self.fixedSize(element) {
                offset += count * fixed
            } else {
                for index in 0..<count { add(value.child(index)) }
            }
            if offset - start > Variant.largestArray { fits = false }
        default:  // a struct or dict entry
            align(8)
            for index in 0..<value.count { add(value.child(index)) }
        }
    }

    private mutating func align(_ boundary: Int) { offset = (offset + boundary - 1) / boundary * boundary }

    /// The size of a fixed-size basic type, which is also its alignment.
    private static func fixedSize(_ code: UInt8) -> Int? {
        switch code {
        case UInt8(ascii: "y"): 1
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"): 4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"): 8
        default: nil
        }
    }

    private static func alignment(_ code: UInt8) -> Int {
        if let fixed = fixedSize(code) { return fixed }
        switch code {
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "a"): return 4
        case UInt8(ascii: "("), UInt8(ascii: "{"): return 8
        default: return 1  // v, g
        }
    }
}
