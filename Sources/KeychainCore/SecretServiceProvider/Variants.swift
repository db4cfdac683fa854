import CLibSecret

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
}
