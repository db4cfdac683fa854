@testable import KeychainAge
@testable import KeychainCore

// The cases of C2SP/CCTV's age/internal/tests, by the name of their generator, each built from
// the pieces in AgeTestVectorTests. "X" is the X25519 stanza for the vectors' identity.
extension AgeTestVectorTests {
    /// The X25519 stanza for the vectors' identity, as text.
    static func x25519Stanza() throws -> String {
        let (share, body) = try x25519()
        return stanza(["X25519", share], body)
    }

    /// A stanza of a type no one reads (age's "grease"), with `arguments` and `body`.
    static func grease(_ arguments: [String] = ["grease", "a", "b"], _ body: [UInt8] = [1, 2, 3]) -> String {
        stanza(arguments, body)
    }

    /// The header's version, stanza and MAC lines.
    static let headerVectors: [Vector] = [
        Vector("x25519", .success) { file(try x25519Stanza()) },
        Vector("header_crlf", .headerFailure) {
            file(version: "age-encryption.org/v1\r\n", try x25519Stanza())
        },
        Vector("version_unsupported", .headerFailure) { file(version: "age-encryption.org/v2\n", try x25519Stanza()) },
        Vector("stanza_bad_start", .headerFailure) { file("-" + (try x25519Stanza()).dropFirst(2)) },
        Vector("stanza_empty_argument", .headerFailure) { file(grease(["grease", "", "b"]) + (try x25519Stanza())) },
        Vector("stanza_no_arguments", .headerFailure) {
            file("-> \n" + AgeFile.wrappedLines("") + (try x25519Stanza()))
        },
        // Each argument is 1*VCHAR (0x21-0x7E): DEL, a control character, a byte above 0x7E.
        Vector("stanza_invalid_character (DEL)", .headerFailure) {
            file(grease(["grease", "a\u{7F}b"]) + (try x25519Stanza()))
        },
        Vector("stanza_invalid_character (tab)", .headerFailure) {
            file(grease(["grease", "a\tb"]) + (try x25519Stanza()))
        },
        Vector("stanza_invalid_character (é)", .headerFailure) {
            file(grease(["grease", "é"]) + (try x25519Stanza()))
        },
        Vector("stanza_valid_characters", .success) {
            let vchar = String((0x21...0x7E).map { Character(Unicode.Scalar(UInt8($0))) })
            return file(grease(["grease", vchar]) + (try x25519Stanza()))
        },
        Vector("stanza_empty_body", .success) { file(grease(["grease"], []) + (try x25519Stanza())) },
        // A body of exactly 48 bytes: one full line of 64 columns, then the empty final line.
        Vector("stanza_empty_last_line", .success) {
            file(grease(["grease"], [UInt8](repeating: 7, count: 48)) + (try x25519Stanza()))
        },
        Vector("stanza_missing_final_line", .headerFailure) {
            let full = grease(["grease"], [UInt8](repeating: 7, count: 48))
            return file(String(full.dropLast()) + (try x25519Stanza()))
        },
        Vector("stanza_missing_body", .headerFailure) { file(try x25519Stanza() + "-> grease\n") },
        Vector("stanza_long_line", .headerFailure) {
            file("-> grease\n" + AgeFile.base64([UInt8](repeating: 7, count: 48)) + "AAAA\n\n" + (try x25519Stanza()))
        },
        Vector("stanza_multiple_short_lines", .headerFailure) {
            file("-> grease\nAAAA\nAAAA\n" + (try x25519Stanza()))
        },
        Vector("stanza_base64_padding", .headerFailure) {
            file("-> grease\n" + AgeFile.base64([1, 2, 3, 4]) + "==\n" + (try x25519Stanza()))
        },
        Vector("stanza_spurious_cr", .headerFailure) {
            file("-> grease\n" + AgeFile.base64([1, 2, 3]) + "\r\n" + (try x25519Stanza()))
        },
        // "AAB" decodes to the same 2 bytes as "AAA" but with bits that canonical base64 leaves 0.
        Vector("stanza_not_canonical", .headerFailure) { file("-> grease\nAAB\n" + (try x25519Stanza())) },
        Vector("hmac_bad", .hmacFailure) {
            file(try x25519Stanza(), macLine: { _ in "--- " + AgeFile.base64([UInt8](repeating: 0, count: 32)) + "\n" })
        },
        Vector("hmac_extra_space", .headerFailure) { file(try x25519Stanza(), macLine: { "---  \($0)\n" }) },
        Vector("hmac_trailing_space", .headerFailure) { file(try x25519Stanza(), macLine: { "--- \($0) \n" }) },
        Vector("hmac_no_space", .headerFailure) { file(try x25519Stanza(), macLine: { "---\($0)\n" }) },
        Vector("hmac_missing", .headerFailure) { file(try x25519Stanza(), macLine: { _ in "---\n" }) },
        Vector("hmac_truncated", .headerFailure) { file(try x25519Stanza(), macLine: { "--- \($0.dropLast(2))\n" }) },
        Vector("hmac_garbage", .headerFailure) { file(try x25519Stanza(), macLine: { "--- \($0)AAAA\n" }) },
        // The MAC's last character changed in bits that canonical base64 leaves 0.
        Vector("hmac_not_canonical", .headerFailure) {
            file(
                try x25519Stanza(),
                macLine: { mac in
                    let last = mac.last!
                    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                    let index = alphabet.firstIndex(of: last)!
                    return "--- \(mac.dropLast())\(alphabet[index ^ 1])\n"
                })
        },
        Vector("no_recipients", .headerFailure) { file("") },
    ]
}

extension AgeTestVectorTests {
    static let otherIdentity = AgeX25519.Identity()

    /// The X25519 recipient type.
    static let x25519Vectors: [Vector] = [
        Vector("x25519_lowercase", .noMatch) {
            let (share, body) = try x25519()
            return file(stanza(["x25519", share], body))
        },
        Vector("x25519_extra_argument", .headerFailure) {
            let (share, body) = try x25519()
            return file(stanza(["X25519", share, "extra"], body))
        },
        Vector("x25519_long_file_key", .headerFailure) {
            let (share, body) = try x25519(fileKey + [0])
            return file(stanza(["X25519", share], body))
        },
        Vector("x25519_short_share", .headerFailure) {
            let (share, body) = try x25519()
            return file(stanza(["X25519", AgeFile.base64(Array(AgeFile.decodeBase64(share)!.dropLast()))], body))
        },
        Vector("x25519_not_canonical_share", .headerFailure) {
            let (share, body) = try x25519()
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
            let flipped = alphabet[alphabet.firstIndex(of: share.last!)! ^ 1]
            return file(stanza(["X25519", share.dropLast() + String(flipped)], body))
        },
        // The all-zero point and the point 1: low order, an all-zero shared secret.
        Vector("x25519_low_order (0)", .headerFailure) {
            file(stanza(["X25519", AgeFile.base64([UInt8](repeating: 0, count: 32))], try x25519().body))
        },
        Vector("x25519_low_order (1)", .headerFailure) {
            file(stanza(["X25519", AgeFile.base64([1] + [UInt8](repeating: 0, count: 31))], try x25519().body))
        },
        Vector("x25519_bad_tag", .noMatch) {
            let (share, body) = try x25519()
            return file(stanza(["X25519", share], Array(body.dropLast()) + [body.last! ^ 1]))
        },
        Vector("x25519_no_match", .noMatch) {
            let (share, body) = try x25519(to: otherIdentity.recipient)
            return file(stanza(["X25519", share], body))
        },
        Vector("x25519_grease", .success) { file(grease() + (try x25519Stanza())) },
        Vector("x25519_multiple_recipients", .success) {
            let (share, body) = try x25519(to: otherIdentity.recipient)
            return file(stanza(["X25519", share], body) + (try x25519Stanza()))
        },
    ]

    /// The scrypt recipient type, with the vectors' salt and work factor 2^10.
    static let scryptVectors: [Vector] =
        [
            Vector("scrypt", .success) { file(try scryptStanza()) },
            Vector("scrypt_uppercase", .noMatch) {
                file(stanza(["Scrypt", AgeFile.base64(salt), "10"], try scryptBody()))
            },
            Vector("scrypt_double", .headerFailure) { file(try scryptStanza() + (try scryptStanza())) },
            Vector("scrypt_and_x25519", .headerFailure) { file(try scryptStanza() + (try x25519Stanza())) },
            Vector("scrypt_extra_argument", .headerFailure) {
                file(stanza(["scrypt", AgeFile.base64(salt), "10", "extra"], try scryptBody()))
            },
            Vector("scrypt_long_file_key", .headerFailure) {
                file(stanza(["scrypt", AgeFile.base64(salt), "10"], try scryptBody(fileKey + [0])))
            },
            Vector("scrypt_no_match", .noMatch) { file(try scryptStanza(Array("wrong".utf8))) },
            Vector("scrypt_bad_tag", .noMatch) {
                let body = try scryptBody()
                return file(stanza(["scrypt", AgeFile.base64(salt), "10"], Array(body.dropLast()) + [body.last! ^ 1]))
            },
            Vector("scrypt_salt_long", .headerFailure) {
                file(stanza(["scrypt", AgeFile.base64(salt + [0]), "10"], try scryptBody()))
            },
            Vector("scrypt_salt_short", .headerFailure) {
                file(stanza(["scrypt", AgeFile.base64(Array(salt.dropLast())), "10"], try scryptBody()))
            },
            Vector("scrypt_salt_missing", .headerFailure) { file(stanza(["scrypt", "10"], try scryptBody())) },
            Vector("scrypt_work_factor_missing", .headerFailure) {
                file(stanza(["scrypt", AgeFile.base64(salt)], try scryptBody()))
            },
            Vector("scrypt_work_factor_wrong", .noMatch) {
                file(stanza(["scrypt", AgeFile.base64(salt), "11"], try scryptBody()))
            },
        ]
        + [
            ("scrypt_work_factor_23", "23"), ("scrypt_work_factor_zero", "0"), ("scrypt_work_factor_negative", "-10"),
            ("scrypt_work_factor_hex", "0xa"), ("scrypt_work_factor_leading_plus", "+10"),
            ("scrypt_work_factor_leading_zero_decimal", "010"), ("scrypt_work_factor_leading_zero_octal", "012"),
            ("scrypt_work_factor_leading_garbage", "x10"), ("scrypt_work_factor_trailing_garbage", "10x"),
            ("scrypt_work_factor_overflow", "18446744073709551626"),
        ].map { name, factor in
            Vector(name, .headerFailure) { file(stanza(["scrypt", AgeFile.base64(salt), factor], try scryptBody())) }
        }

    /// An scrypt stanza for `passphrase` (the vectors' by default).
    static func scryptStanza(_ passphrase: [UInt8] = passphrase) throws -> String {
        stanza(["scrypt", AgeFile.base64(salt), "10"], try scryptBody(passphrase: passphrase))
    }

    static let fullChunk = [UInt8](repeating: 0x61, count: 64 * 1024)

    /// The payload: a nonce, then STREAM chunks of 64 KiB, the last one flagged and never empty
    /// unless it is the only one.
    static let streamVectors: [Vector] = [
        Vector("stream_empty_payload", .success, plaintext: []) {
            file(try x25519Stanza(), payload: chunks([([], true)]))
        },
        Vector("stream_last_chunk_full", .success, plaintext: fullChunk) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, true)]))
        },
        Vector("stream_last_chunk_full_second", .success, plaintext: fullChunk + fullChunk) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, false), (fullChunk, true)]))
        },
        Vector("stream_two_chunks", .success, plaintext: fullChunk + plaintext) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, false), (plaintext, true)]))
        },
        Vector("stream_last_chunk_empty", .payloadFailure) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, false), ([], true)]))
        },
        Vector("stream_missing_final", .payloadFailure) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, false)]))
        },
        Vector("stream_no_final", .payloadFailure) { file(try x25519Stanza(), payload: chunks([(plaintext, false)])) },
        Vector("stream_two_final_chunks", .payloadFailure) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, true), (plaintext, true)]))
        },
        Vector("stream_bad_tag", .payloadFailure) {
            var payload = chunks([(plaintext, true)])
            payload[payload.count - 1] ^= 1
            return file(try x25519Stanza(), payload: payload)
        },
        Vector("stream_bad_tag_second_chunk", .payloadFailure) {
            var payload = chunks([(fullChunk, false), (plaintext, true)])
            payload[payload.count - 1] ^= 1
            return file(try x25519Stanza(), payload: payload)
        },
        Vector("stream_trailing_garbage_short", .payloadFailure) {
            file(try x25519Stanza(), payload: chunks([(plaintext, true)]) + [0])
        },
        Vector("stream_trailing_garbage_long", .payloadFailure) {
            file(try x25519Stanza(), payload: chunks([(fullChunk, true)]) + [UInt8](repeating: 0, count: 17))
        },
        Vector("stream_no_chunks", .payloadFailure) { file(try x25519Stanza(), payload: nonce) },
        Vector("stream_short_nonce", .payloadFailure) { file(try x25519Stanza(), payload: Array(nonce.prefix(12))) },
        Vector("stream_no_nonce", .payloadFailure) { file(try x25519Stanza(), payload: []) },
        Vector("stream_short_chunk", .payloadFailure) {
            file(try x25519Stanza(), payload: Array(chunks([(plaintext, true)]).dropLast(plaintext.count + 1)))
        },
    ]
}
