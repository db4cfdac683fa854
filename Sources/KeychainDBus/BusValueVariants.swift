internal import CLibSecret

// A BusValue as GDBus carries it: built as a GVariant for a call, read back from a reply's.

extension BusValue {
    /// A new GVariant holding this value, sunk (no floating reference is left for a `try` to lose).
    package var variant: OwnedVariant { OwnedVariant(sinking: floating) }

    /// A new floating GVariant holding this value, for a container (or a call) to take.
    private var floating: OpaquePointer {
        switch self {
        case .byte(let byte): return g_variant_new_byte(byte)
        case .boolean(let flag): return g_variant_new_boolean(flag ? 1 : 0)
        case .uint32(let number): return g_variant_new_uint32(number)
        case .uint64(let number): return g_variant_new_uint64(guint64(number))
        case .string(let text): return g_variant_new_string(text)
        case .objectPath(let text): return g_variant_new_object_path(text)
        case .signature(let text): return g_variant_new_signature(text)
        case .bytes(let data): return byteArrayVariant(data)
        case .array(let element, let elements):
            let children: [OpaquePointer?] = elements.map { $0.floating }
            return g_variant_new_array(g_variant_type_checked_(element), children, gsize(children.count))
        case .dictionary(let key, let value, let entries):
            let children: [OpaquePointer?] = entries.map {
                g_variant_new_dict_entry($0.key.floating, $0.value.floating)
            }
            return g_variant_new_array(
                g_variant_type_checked_("{" + key + value + "}"), children, gsize(children.count))
        case .structure(let fields):
            let children: [OpaquePointer?] = fields.map { $0.floating }
            return g_variant_new_tuple(children, gsize(children.count))
        case .variant(let inner):
            return g_variant_new_variant(inner.floating)
        case .other:
            preconditionFailure("a value read but not modelled is never sent")
        }
    }

    /// The value `variant` holds (``other(_:)`` for a basic type the Secret Service does not use);
    /// nil for a type D-Bus does not have (a maybe).
    package init?(_ variant: OwnedVariant) {
        let type = variant.typeString
        switch type.utf8.first {
        case UInt8(ascii: "y"): self = .byte(variant.use { g_variant_get_byte($0) })
        case UInt8(ascii: "b"): self = .boolean(variant.boolean)
        case UInt8(ascii: "u"): self = .uint32(variant.uint32)
        case UInt8(ascii: "t"): self = .uint64(variant.uint64)
        case UInt8(ascii: "s"): self = .string(variant.string)
        case UInt8(ascii: "o"): self = .objectPath(variant.string)
        case UInt8(ascii: "g"): self = .signature(variant.string)
        case UInt8(ascii: "v"):
            guard let inner = BusValue(variant.unboxed) else { return nil }
            self = .variant(inner)
        case UInt8(ascii: "("):
            var fields: [BusValue] = []
            for child in variant.children {
                guard let field = BusValue(child) else { return nil }
                fields.append(field)
            }
            self = .structure(fields)
        case UInt8(ascii: "a") where type == "ay":
            self = .bytes(variant.bytes)
        case UInt8(ascii: "a") where type.hasPrefix("a{"):
            let inner = type.dropFirst(2).dropLast()
            var entries: [Entry] = []
            for entry in variant.children {
                guard let key = BusValue(entry.child(0)), let value = BusValue(entry.child(1)) else { return nil }
                entries.append(Entry(key, value))
            }
            let keyType = String(inner.prefix(1))
            self = .dictionary(key: keyType, value: String(inner.dropFirst()), entries)
        case UInt8(ascii: "a"):
            var elements: [BusValue] = []
            for child in variant.children {
                guard let element = BusValue(child) else { return nil }
                elements.append(element)
            }
            self = .array(element: String(type.dropFirst()), elements)
        case _ where ["n", "q", "i", "h", "x", "d"].contains(type):
            self = .other(type)
        default:
            return nil
        }
    }
}
