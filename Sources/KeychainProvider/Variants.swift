internal import CLibSecret
import KeychainGLib

// GVariant values for the provider's replies (new floating references, which GDBus takes over),
// and the readers of its arguments. g_variant_new is variadic, so values are built from parts.
enum Variant {
    static func string(_ text: String) -> OpaquePointer { g_variant_new_string(text)! }
    static func boolean(_ value: Bool) -> OpaquePointer { g_variant_new_boolean(value ? 1 : 0)! }
    static func uint64(_ value: UInt64) -> OpaquePointer { g_variant_new_uint64(guint64(value))! }
    static func objectPath(_ path: String) -> OpaquePointer { g_variant_new_object_path(path)! }
    static func boxed(_ value: OpaquePointer) -> OpaquePointer { g_variant_new_variant(value)! }

    static func tuple(_ children: [OpaquePointer]) -> OpaquePointer {
        var children: [OpaquePointer?] = children
        return g_variant_new_tuple(&children, gsize(children.count))!
    }

    static func array(of type: OpaquePointer, _ children: [OpaquePointer]) -> OpaquePointer {
        var children: [OpaquePointer?] = children
        return g_variant_new_array(type, &children, gsize(children.count))!
    }

    static func objectPaths(_ paths: [String]) -> OpaquePointer {
        array(of: keychain_cli_type_object_path(), paths.map(objectPath))
    }

    static func stringMap(_ map: [String: String]) -> OpaquePointer {
        array(
            of: keychain_cli_type_string_pair(),
            map.sorted { $0.key < $1.key }.map { g_variant_new_dict_entry(string($0.key), string($0.value))! })
    }

    static func propertyMap(_ map: [(String, OpaquePointer)]) -> OpaquePointer {
        array(of: keychain_cli_type_property_pair(), map.map { g_variant_new_dict_entry(string($0.0), boxed($0.1))! })
    }

    /// A secret struct `(oayays)`: session, parameters, value, content type.
    static func secret(session: String, parameters: [UInt8], value: [UInt8], contentType: String) -> OpaquePointer {
        tuple([objectPath(session), byteArrayVariant(parameters), byteArrayVariant(value), string(contentType)])
    }

    // MARK: Reading arguments

    /// Child `index` of `tuple`; the caller unrefs it.
    static func child(_ tuple: OpaquePointer, _ index: Int) -> OpaquePointer {
        g_variant_get_child_value(tuple, gsize(index))!
    }

    /// The string (or object path) in `value`.
    static func text(_ value: OpaquePointer) -> String { String(cString: g_variant_get_string(value, nil)) }

    /// The strings (or object paths) of an `as` or `ao`.
    static func texts(_ array: OpaquePointer) -> [String] {
        (0..<Int(g_variant_n_children(array))).map { index in
            let item = child(array, index)
            defer { g_variant_unref(item) }
            return text(item)
        }
    }

    /// The pairs of an `a{ss}`.
    static func strings(_ map: OpaquePointer) -> [String: String] {
        var result: [String: String] = [:]
        for index in 0..<Int(g_variant_n_children(map)) {
            let entry = child(map, index)
            defer { g_variant_unref(entry) }
            result[variantString(entry, child: 0)] = variantString(entry, child: 1)
        }
        return result
    }

    /// The entries of an `a{sv}`, each value unboxed; the caller unrefs them.
    static func properties(_ map: OpaquePointer) -> [String: OpaquePointer] {
        var result: [String: OpaquePointer] = [:]
        for index in 0..<Int(g_variant_n_children(map)) {
            let entry = child(map, index)
            defer { g_variant_unref(entry) }
            let boxed = child(entry, 1)
            defer { g_variant_unref(boxed) }
            if let old = result.updateValue(g_variant_get_variant(boxed)!, forKey: variantString(entry, child: 0)) {
                g_variant_unref(old)
            }
        }
        return result
    }

    /// Whether `value` is of the type `signature` names.
    static func has(_ value: OpaquePointer, type signature: OpaquePointer) -> Bool {
        g_variant_is_of_type(value, signature) != 0
    }

    // MARK: D-Bus's limits

    /// The largest array, and the largest message, D-Bus allows: dbus-daemon drops the
    /// connection of a process that sends more.
    static let largestArray = 1 << 26
    static let largestMessage = 1 << 27

    /// Whether `body`, sent as a message's body, keeps within D-Bus's limits: no array of more than
    /// 64 MiB, and the whole message (with room for its header) within 128 MiB. Counted as D-Bus
    /// encodes it, with its padding and lengths, not as GVariant does.
    static func fitsInMessage(_ body: OpaquePointer) -> Bool {
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

    mutating func add(_ value: OpaquePointer) {
        let type = String(cString: g_variant_get_type_string(value))
        let code = type.utf8.first!
        if let fixed = Self.fixedSize(code) {
            align(fixed)
            offset += fixed
            return
        }
        switch code {
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            align(4)
            offset += 4 + Int(g_variant_get_size(value))  // the length, the text, its NUL
        case UInt8(ascii: "g"):
            offset += 1 + Int(g_variant_get_size(value))
        case UInt8(ascii: "v"):
            let inner = g_variant_get_variant(value)!
            defer { g_variant_unref(inner) }
            offset += 2 + Int(strlen(g_variant_get_type_string(inner)))
            add(inner)
        case UInt8(ascii: "a"):
            align(4)
            offset += 4
            let element = type.utf8.dropFirst().first!
            align(Self.alignment(element))
            let start = offset
            let count = Int(g_variant_n_children(value))
            if let fixed = Self.fixedSize(element) {
                offset += count * fixed
            } else {
                for index in 0..<count {
                    let child = g_variant_get_child_value(value, gsize(index))!
                    add(child)
                    g_variant_unref(child)
                }
            }
            if offset - start > Variant.largestArray { fits = false }
        default:  // a struct or dict entry
            align(8)
            for index in 0..<Int(g_variant_n_children(value)) {
                let child = g_variant_get_child_value(value, gsize(index))!
                add(child)
                g_variant_unref(child)
            }
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
