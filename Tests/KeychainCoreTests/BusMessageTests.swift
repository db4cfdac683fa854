import CLibSecret
import Glibc
import KeychainStore
import Testing

@testable import KeychainDBus
@testable import KeychainSecretService

/// The D-Bus messages of the direct read path (BusMessage.swift), checked against GDBus, which
/// reads what we write and writes what we read, in both byte orders.
@Suite("D-Bus messages of the direct read path, against GDBus")
struct BusMessageTests {
    @Test func gdbusReadsOurMethodCall() throws {
        let bytes = BusMessage.call(
            serial: 7, destination: "org.freedesktop.secrets", path: "/org/freedesktop/secrets",
            interface: "org.freedesktop.Secret.Service", member: "SearchItems", signature: "a{ss}"
        ) { body in
            body.array(alignment: 8) { entries in
                for (key, value) in [("service", "svc é"), ("username", "")] {
                    entries.align(8)
                    entries.string(key)
                    entries.string(value)
                }
            }
        }
        let message = try #require(gdbus(bytes))
        message.use { message in
            #expect(g_dbus_message_get_message_type(message) == G_DBUS_MESSAGE_TYPE_METHOD_CALL)
            #expect(g_dbus_message_get_serial(message) == 7)
            #expect(String(cString: g_dbus_message_get_destination(message)) == "org.freedesktop.secrets")
            #expect(String(cString: g_dbus_message_get_path(message)) == "/org/freedesktop/secrets")
            #expect(String(cString: g_dbus_message_get_interface(message)) == "org.freedesktop.Secret.Service")
            #expect(String(cString: g_dbus_message_get_member(message)) == "SearchItems")
            #expect(String(cString: g_dbus_message_get_signature(message)) == "a{ss}")
            #expect(printed(g_dbus_message_get_body(message)) == "({'service': 'svc é', 'username': ''},)")
        }
        // OpenSession's (sv) with an ay inside the variant, and a call with no body.
        let open = BusMessage.call(
            serial: 8, destination: "d.e", path: "/p", interface: "i.j", member: "OpenSession", signature: "sv"
        ) { body in
            body.string("plain")
            body.signature("ay")
            body.byteArray([0, 1, 255])
        }
        #expect(
            gdbus(open).map { printed(g_dbus_message_get_body($0.opaque)) } == "('plain', <[byte 0x00, 0x01, 0xff]>)")
        let hello = BusMessage.call(serial: 1, destination: "d.e", path: "/", interface: "i.j", member: "Hello")
        #expect(gdbus(hello).map { g_dbus_message_get_body($0.opaque) == nil } == true)
    }

    @Test(arguments: [G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN])
    func weReadGDBusRepliesInEitherByteOrder(order: GDBusMessageByteOrder) throws {
        let search = try #require(
            try reply("(@ao ['/org/freedesktop/secrets/collection/login/1', '/a'], @ao [])", order))
        #expect(search.kind == .methodReturn && search.replySerial == 41 && search.signature == "aoao")
        var body = search.body
        #expect(try body.objectPaths() == ["/org/freedesktop/secrets/collection/login/1", "/a"])
        #expect(try body.objectPaths() == [])

        let session = try #require(try reply("(<[byte 0x01, 0x02]>, objectpath '/s/1')", order))
        body = session.body
        #expect(session.signature == "vo")
        #expect(try body.signature() == "ay" && body.byteArray() == [1, 2] && body.string() == "/s/1")

        let secret = try #require(
            try reply("((objectpath '/s/1', [byte 0x09], [byte 0x61, 0x62], 'text/plain'),)", order))
        body = secret.body
        body.align(8)
        #expect(secret.signature == "(oayays)")
        #expect(try body.string() == "/s/1" && body.byteArray() == [9] && body.byteArray() == [0x61, 0x62])
        #expect(try body.string() == "text/plain" && body.atEnd)

        let locked = try #require(try reply("(<true>,)", order))
        body = locked.body
        #expect(try body.signature() == "b" && body.boolean())
    }

    @Test func weReadGDBusErrors() throws {
        let call = OwnedObject(
            taking: UnsafeMutableRawPointer(g_dbus_message_new_method_call("d.e", "/p", "i.j", "M")!))
        g_dbus_message_set_serial(call.opaque, 5)
        let error = OwnedObject(
            taking: UnsafeMutableRawPointer(
                g_dbus_message_new_method_error_literal(
                    call.opaque, "org.freedesktop.Secret.Error.IsLocked", "it is locked")!))
        g_dbus_message_set_serial(error.opaque, 6)
        let received = try BusMessage.parse(try #require(blob(error))[...])
        #expect(received.kind == .error && received.replySerial == 5)
        #expect(received.errorName == "org.freedesktop.Secret.Error.IsLocked")
        var body = received.body
        #expect(try body.string() == "it is locked")
    }

    /// Every cut of a valid reply is incomplete or refused, and no flipped byte makes the reader
    /// run past the message: an error or a value, never a crash.
    @Test func cutOrDamagedMessagesAreRefused() throws {
        let whole = try #require(replyBlob("(@ao ['/a/b'], @ao ['/c'])", G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN))
        for count in 0..<whole.count {
            let cut = whole[..<count]
            let length = try? BusMessage.length(cut)
            #expect(length == nil || length! > count)
        }
        for index in whole.indices {
            for value: UInt8 in [0, 0x7F, 0xFF] {
                var damaged = whole
                damaged[index] = value
                guard let length = try? BusMessage.length(damaged[...]), length <= damaged.count,
                    var body = try? BusMessage.parse(damaged[..<length]).body
                else { continue }
                _ = try? body.objectPaths()
                _ = try? body.objectPaths()
            }
        }
        #expect(throws: DBusError.self) { try BusMessage.parse([UInt8(ascii: "x")] + whole.dropFirst()) }
    }

    /// The values of the Secret Service's calls and replies, as ``BusValue`` holds them.
    static let values: [BusValue] = {
        let secret = BusValue.structure([
            .objectPath("/s/1"), .bytes([9]), .bytes([0x61, 0x62]), .string("text/plain"),
        ])
        return [
            .string("svc é"), .objectPath("/org/freedesktop/secrets/aliases/default"), .boolean(true), .uint32(7),
            .byte(9), .uint64(1 << 40), .signature("a{sv}"), .bytes([0, 1, 255]), .bytes([]),
            .array(element: "o", [.objectPath("/a"), .objectPath("/b/c")]), .array(element: "o", []),
            .strings([("service", "s"), ("username", "")]),
            .dictionary(
                key: "s", value: "v",
                [
                    .init(.string("org.freedesktop.Secret.Item.Label"), .variant(.string("L"))),
                    .init(.string("org.freedesktop.Secret.Item.Attributes"), .variant(.strings([("a", "b")]))),
                ]),
            secret, .variant(.bytes([1, 2, 3])), .array(element: "(oayays)", [secret, secret]),
            .dictionary(key: "o", value: "(oayays)", [.init(.objectPath("/i/1"), secret)]),
        ]
    }()

    /// What we write GDBus reads as the same values, what GDBus writes (in either byte order) we
    /// read as the same values, and a value made a GVariant reads back as itself: one value type
    /// for both ways to the bus.
    @Test func valuesGoEitherWayUnchanged() throws {
        let signature = Self.values.map(\.signature).joined()
        let call = BusMessage.call(
            serial: 3, destination: "d.e", path: "/p", interface: "i.j", member: "M", signature: signature
        ) { body in
            for value in Self.values { body.value(value) }
        }
        let message = try #require(gdbus(call))
        let read = message.use { OwnedVariant(taking: g_variant_ref(g_dbus_message_get_body($0)!)) }
        #expect(BusValue(read) == .structure(Self.values))
        for order in [G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN, G_DBUS_MESSAGE_BYTE_ORDER_BIG_ENDIAN] {
            let bytes = try #require(BusValue.structure(Self.values).variant.use { replyBlob($0, order) })
            let reply = try BusMessage.parse(bytes[...])
            var body = reply.body
            #expect(reply.signature == signature)
            #expect(try body.values(signature) == Self.values)
            #expect(body.atEnd)
        }
        for value in Self.values { #expect(BusValue(value.variant) == value, "\(value.signature)") }
    }

    /// A signature that is not one, or a body shorter than its signature says, is malformed.
    @Test func badSignaturesAndShortBodiesAreMalformed() throws {
        let bytes = try #require(
            BusValue.structure(Self.values).variant.use {
                replyBlob($0, G_DBUS_MESSAGE_BYTE_ORDER_LITTLE_ENDIAN)
            })
        let body = try BusMessage.parse(bytes[...]).body
        for bad in ["a", "(s", "a{s", "{ss}", "z", "s}", String(repeating: "a", count: 70) + "s"] {
            var reader = body
            #expect(throws: DBusError.malformed, "\(bad)") { try reader.values(bad) }
        }
        var short = body
        #expect(throws: DBusError.malformed) { try short.values(Self.values.map(\.signature).joined() + "s") }
    }

    /// A value of a basic type the Secret Service does not use (a provider's odd Label, say) is
    /// read past, aligned as its type requires, and named by its signature: the values around it
    /// are read, and the reply is not malformed.
    @Test func basicTypesTheServiceDoesNotUseAreSkipped() throws {
        // n (2 bytes), 2 of padding, i (4), s "ab" at 8 (length 4, 3 bytes), 1 of padding, d at 16.
        let bytes: [UInt8] = [1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 97, 98, 0, 0] + [UInt8](repeating: 7, count: 8)
        var reader = try BusReader(bytes[...], endian: UInt8(ascii: "l"))
        #expect(try reader.values("nisd") == [.other("n"), .other("i"), .string("ab"), .other("d")])
        #expect(reader.atEnd)
        #expect(BusValue.other("x").signature == "x")
    }

    // MARK: GDBus as the peer

    private func gdbus(_ bytes: [UInt8]) -> OwnedObject? {
        var copy = bytes
        let message = copy.withUnsafeMutableBufferPointer {
            g_dbus_message_new_from_blob($0.baseAddress, gsize($0.count), G_DBUS_CAPABILITY_FLAGS_NONE, nil)
        }
        return message.map { OwnedObject(taking: UnsafeMutableRawPointer($0)) }
    }

    private func printed(_ value: OpaquePointer?) -> String? {
        guard let value, let text = g_variant_print(value, 1) else { return nil }
        defer { free(text) }
        return String(cString: text)
    }

    /// GDBus's reply to a call of serial 41 with `body` (GVariant text), in byte order `order`.
    private func replyBlob(_ body: String, _ order: GDBusMessageByteOrder) -> [UInt8]? {
        guard let value = g_variant_parse(nil, body, nil, nil, nil) else { return nil }
        return replyBlob(value, order)
    }

    /// GDBus's reply to a call of serial 41 with the tuple `value` as its body.
    private func replyBlob(_ value: OpaquePointer, _ order: GDBusMessageByteOrder) -> [UInt8]? {
        let call = OwnedObject(
            taking: UnsafeMutableRawPointer(g_dbus_message_new_method_call("d.e", "/p", "i.j", "M")!))
        g_dbus_message_set_serial(call.opaque, 41)
        let reply = OwnedObject(taking: UnsafeMutableRawPointer(g_dbus_message_new_method_reply(call.opaque)!))
        g_dbus_message_set_body(reply.opaque, value)
        g_dbus_message_set_byte_order(reply.opaque, order)
        g_dbus_message_set_serial(reply.opaque, 42)
        return blob(reply)
    }

    private func reply(_ body: String, _ order: GDBusMessageByteOrder) throws -> BusMessage.Received? {
        guard let bytes = replyBlob(body, order) else { return nil }
        #expect(try BusMessage.length(bytes[...]) == bytes.count)
        return try BusMessage.parse(bytes[...])
    }

    private func blob(_ message: OwnedObject) -> [UInt8]? {
        var size: gsize = 0
        guard let bytes = g_dbus_message_to_blob(message.opaque, &size, G_DBUS_CAPABILITY_FLAGS_NONE, nil) else {
            return nil
        }
        defer { free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(size)))
    }
}
