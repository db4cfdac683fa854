package import CLibSecret

// Small conversions between GLib's C types and Swift's, shared by the Secret Service files.

/// The name of the D-Bus error a remote peer answered with, or nil for a local error.
package func remoteErrorName(_ error: UnsafeMutablePointer<GError>) -> String? {
    g_dbus_error_get_remote_error(error).map { name in
        defer { g_free(name) }
        return String(cString: name)
    }
}

/// The string in child `index` of a tuple GVariant such as `(ss)` that is not ours: the
/// parameters GDBus lends a signal handler.
package func variantString(_ tuple: OpaquePointer, child index: Int) -> String {
    let child = g_variant_get_child_value(tuple, gsize(index))!
    defer { g_variant_unref(child) }
    return String(cString: g_variant_get_string(child, nil))
}

/// A new floating `ay` GVariant holding `bytes`: what ``OwnedVariant/bytes`` reads back.
package func byteArrayVariant(_ bytes: [UInt8]) -> OpaquePointer {
    bytes.withUnsafeBytes { buffer in
        g_variant_new_fixed_array(keychain_cli_type_byte(), buffer.baseAddress, gsize(buffer.count), 1)!
    }
}

/// The value inside the first child of a `(v…)` reply, as Properties.Get and OpenSession return it.
package func propertyValue(_ reply: OwnedVariant) -> OwnedVariant {
    reply.child(0).unboxed
}
