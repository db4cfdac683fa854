package import CLibSecret
import FoundationEssentials

// Who owns what GLib hands us: each reference the library keeps is one of these objects, and is
// dropped when the object is, on every path out (a return, a thrown error). No Swift file outside
// this target calls g_object_unref, g_variant_unref, g_free or g_error_free (check-layout).

/// A reference to a GVariant, dropped with this object.
///
/// Swift may drop an object right after its last use: `raw` read from a temporary, or from a
/// variable not used again, may be freed before the C call it is passed to runs. Pass `raw` only
/// where the object is sure to outlive the call (a parameter, a stored property); else call C
/// inside ``use(_:)``, and read values with the accessors below.
package final class OwnedVariant {
    package let raw: OpaquePointer

    /// Takes a full reference the caller was given: a D-Bus reply, a child value, a lookup.
    package init(taking raw: OpaquePointer) { self.raw = raw }

    /// Takes a new floating GVariant (what `g_variant_new_*` return), sinking it: a call that
    /// would have consumed it may never be made, and it is dropped all the same.
    package init(sinking floating: OpaquePointer) { raw = g_variant_ref_sink(floating) }

    /// Takes `raw` when there is one.
    package convenience init?(takingIfAny raw: OpaquePointer?) {
        guard let raw else { return nil }
        self.init(taking: raw)
    }

    deinit { g_variant_unref(raw) }

    /// An empty tuple `()`.
    package static func emptyTuple() -> OwnedVariant { OwnedVariant(sinking: g_variant_new_tuple(nil, 0)) }

    /// A tuple of `children`: new floating GVariants, which it takes.
    package static func tuple(_ children: [OpaquePointer?]) -> OwnedVariant {
        OwnedVariant(sinking: g_variant_new_tuple(children, gsize(children.count)))
    }

    /// A tuple of `children` (it adds its own references).
    package static func tuple(_ children: [OwnedVariant]) -> OwnedVariant {
        withExtendedLifetime(children) { tuple(children.map { Optional($0.raw) }) }
    }

    /// Runs `body` with the GVariant, kept until `body` returns.
    package func use<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(raw) }
    }

    /// Whether it is of the type `type` (a GVariantType).
    package func isOfType(_ type: OpaquePointer) -> Bool { g_variant_is_of_type(raw, type) != 0 }

    /// The value of a `u`.
    package var uint32: UInt32 { g_variant_get_uint32(raw) }

    /// The value of a `t`.
    package var uint64: UInt64 { UInt64(g_variant_get_uint64(raw)) }

    /// Child `index` of a container (a tuple, an array, a dictionary entry).
    package func child(_ index: Int) -> OwnedVariant {
        OwnedVariant(taking: g_variant_get_child_value(raw, gsize(index))!)
    }

    /// The number of children of a container.
    package var count: Int { Int(g_variant_n_children(raw)) }

    /// The children of a container, in order.
    package var children: [OwnedVariant] { (0..<count).map(child) }

    /// The value boxed in a `v`.
    package var unboxed: OwnedVariant { OwnedVariant(taking: g_variant_get_variant(raw)!) }

    /// The string of an `s`, `o` or `g`.
    package var string: String { String(cString: g_variant_get_string(raw, nil)) }

    /// The bytes of an `ay`.
    package var bytes: [UInt8] {
        var count: gsize = 0
        guard let base = g_variant_get_fixed_array(raw, &count, 1), count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: base, count: Int(count)))
    }

    /// The value of a `b`.
    package var boolean: Bool { g_variant_get_boolean(raw) != 0 }

    /// The type string, such as `a{sv}`.
    package var typeString: String { String(cString: g_variant_get_type_string(raw)) }

    /// The value under `key` in an `a{sv}` or `a{ss}` dictionary.
    package func lookup(_ key: String) -> OwnedVariant? {
        OwnedVariant(takingIfAny: g_variant_lookup_value(raw, key, nil))
    }
}

/// A reference to a GObject (a bus connection, a proxy, libsecret's service), dropped with this object.
package final class OwnedObject: @unchecked Sendable {
    // @unchecked: GObject's reference counting is atomic, and the object is only read through
    // `raw`; what may be done with it from which thread is the caller's rule (docs/development.md).
    package let raw: UnsafeMutableRawPointer

    /// Takes a full reference the caller was given (a `…_finish`, a `…_new`).
    package init(taking raw: UnsafeMutableRawPointer) { self.raw = raw }

    /// Adds a reference of its own to an object someone else keeps.
    package init(adding raw: UnsafeMutableRawPointer) { self.raw = g_object_ref(raw) }

    deinit { g_object_unref(raw) }

    /// The object as the C functions of opaque types take it (GDBusConnection).
    package var opaque: OpaquePointer { OpaquePointer(raw) }

    /// The object as a pointer to `type` (SecretService, GDBusProxy).
    package func pointer<T>(to type: T.Type) -> UnsafeMutablePointer<T> { raw.assumingMemoryBound(to: type) }
}

/// A `GHashTable` of strings to strings, as libsecret takes attributes, dropped with this object.
package final class OwnedAttributes {
    package let raw: OpaquePointer

    package init(_ pairs: some Sequence<(key: String, value: String)>) {
        raw = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (name, value) in pairs {
            g_hash_table_insert(raw, g_strdup(name), g_strdup(value))
        }
    }

    deinit { g_hash_table_unref(raw) }

    /// Runs `body` with the table, kept until `body` returns.
    package func use<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(raw) }
    }
}

/// A GError's contents in Swift: what a caller needs to decide what it means.
package struct GLibError: Error, Equatable, Sendable {
    package let domain: GQuark
    package let code: Int32
    package let message: String
    /// The name of the D-Bus error a remote peer answered with, nil for a local error.
    package let remoteName: String?

    /// Reads `error` without freeing it (GDBus frees what it passes to a handler).
    package init(_ error: UnsafeMutablePointer<GError>) {
        domain = error.pointee.domain
        code = error.pointee.code
        message = error.pointee.message.map { String(cString: $0) } ?? "unknown error"
        remoteName = remoteErrorName(error)
    }

    /// Whether it is `code` of GIO's error domain.
    package func isIOError(_ code: GIOErrorEnum) -> Bool {
        domain == keychain_cli_io_error_quark() && self.code == Int32(code.rawValue)
    }
}

/// The slot a GLib call leaves its error in.
package typealias GErrorSlot = UnsafeMutablePointer<UnsafeMutablePointer<GError>?>

/// Takes the error out of `slot` (leaving it empty), freed: nil when there is none.
package func takeError(_ slot: GErrorSlot) -> GLibError? {
    guard let error = slot.pointee else { return nil }
    defer { g_clear_error(slot) }
    return GLibError(error)
}

/// Runs `body` with an error slot of its own and returns its value and the error it left, freed.
package func catchingError<T>(_ body: (GErrorSlot) -> T) -> (value: T, error: GLibError?) {
    var error: UnsafeMutablePointer<GError>?
    let value = body(&error)
    return (value, takeError(&error))
}

/// The strings of a NULL-terminated `gchar**` GLib gave us to free, freed.
package func takeStrings(_ vector: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
    defer { g_strfreev(vector) }
    guard var cursor = vector else { return [] }
    var result: [String] = []
    while let string = cursor.pointee {
        result.append(String(cString: string))
        cursor += 1
    }
    return result
}

/// The GObjects of a `GList` whose elements and list GLib gave us: each taken, the list freed.
package func takeObjects(_ list: UnsafeMutablePointer<GList>?) -> [OwnedObject] {
    var objects: [OwnedObject] = []
    var node = list
    while let current = node {
        if let data = current.pointee.data { objects.append(OwnedObject(taking: data)) }
        node = current.pointee.next
    }
    g_list_free(list)
    return objects
}

extension OwnedObject {
    /// Runs `body` with the object as an opaque pointer, keeping the object until `body` returns
    /// (Swift may otherwise drop it after its last use, before the C calls made with the pointer).
    package func use<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(opaque) }
    }

    /// Runs `body` with the object as a pointer to `type`, keeping the object until `body` returns.
    package func use<T, Result>(as type: T.Type, _ body: (UnsafeMutablePointer<T>) throws -> Result) rethrows -> Result
    {
        try withExtendedLifetime(self) { try body(pointer(to: type)) }
    }
}

/// The bytes of a libsecret `SecretValue` we were given, the value dropped.
package func takeSecretValue(_ value: OpaquePointer) -> Data {
    defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
    var length: gsize = 0
    guard let bytes = secret_value_get(value, &length) else { return Data() }
    return Data(bytes: bytes, count: Int(length))
}

/// A libsecret `SecretValue` holding a copy of a secret (in libsecret's non-pageable memory),
/// dropped with this object.
package final class OwnedSecretValue {
    package let raw: OpaquePointer

    package init(_ secret: Data, contentType: String) {
        raw = secret.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return secret_value_new("", 0, contentType)! }
            return secret_value_new(base.assumingMemoryBound(to: CChar.self), gssize(buffer.count), contentType)!
        }
    }

    deinit { secret_value_unref(UnsafeMutableRawPointer(raw)) }

    /// Runs `body` with the value, kept until `body` returns.
    package func use<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
        try withExtendedLifetime(self) { try body(raw) }
    }
}

/// A timeout source on a context that does nothing but wake it every `milliseconds`, removed
/// and dropped with this object.
package final class WakeUpSource {
    private let source: UnsafeMutablePointer<GSource>

    package init(milliseconds: UInt32, on context: OpaquePointer) {
        source = g_timeout_source_new(milliseconds)!
        g_source_set_callback(source, { _ in 1 }, nil, nil)  // G_SOURCE_CONTINUE
        g_source_attach(source, context)
    }

    deinit {
        g_source_destroy(source)
        g_source_unref(source)
    }
}
