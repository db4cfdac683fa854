import Crypto
import CryptoExtras
import FoundationEssentials
import KeychainSystem

/// The age v1 file format (https://age-encryption.org/v1) with one scrypt (passphrase) recipient,
/// as `age --encrypt --passphrase` writes it and `age --decrypt` reads it:
///
/// ```
/// age-encryption.org/v1
/// -> scrypt <salt, base64> <log2 of the work factor>
/// <the file key wrapped with ChaCha20-Poly1305 under scrypt(passphrase), base64>
/// --- <HMAC-SHA256 of the header, base64>
/// <16-byte nonce><the payload in STREAM chunks of 64 KiB, ChaCha20-Poly1305>
/// ```
///
/// Every primitive comes from swift-crypto; this file only lays the bytes out.
package enum AgeFile {
    /// age's own default: scrypt with N = 2^18 (about 0.6 s and 256 MiB here).
    package static let defaultWorkFactor = 18
    /// The work factors accepted when reading or writing. age reads up to 22, but 2^22 costs
    /// 4 GiB of memory, which a tampered header must not be able to demand; age writes 18.
    package static let workFactors = 1...20

    static let versionLine = "age-encryption.org/v1"
    private static let chunkSize = 64 * 1024
    private static let tagSize = 16

    package enum Failure: Error, Equatable {
        /// Not an age file, or one this reader does not support; the reason says which.
        case malformed(String)
        /// The passphrase does not unwrap the file key (or the recipient stanza was altered).
        case wrongPassphrase
        /// The file is encrypted to recipients (these types), and no identity was given.
        case needsIdentity([String])
        /// None of the identities given opens any of the file's recipient stanzas.
        case noIdentityMatches
    }

    /// One recipient stanza: `-> TYPE ARGUMENTS…` and its body.
    package struct Stanza: Sendable {
        package var arguments: [String]
        package var body: [UInt8]
        package var type: String { arguments.first ?? "" }
    }

    /// A parsed header and the file key it wraps: kept by a reader so that the next write can
    /// reuse it without paying for scrypt again.
    package struct Header: Sendable {
        /// The header's bytes, from the version line through the MAC line's newline.
        package var bytes: [UInt8]
        var fileKey: SymmetricKey
        /// The types of its recipient stanzas, in order.
        package var stanzaTypes: [String]
    }

    // MARK: Writing

    /// A new header for `stanzas` (each wrapping `fileKey`), with its MAC.
    static func makeHeader(fileKey: SymmetricKey, stanzas: [Stanza]) -> Header {
        var text = "\(versionLine)\n"
        for stanza in stanzas {
            text += "-> \(stanza.arguments.joined(separator: " "))\n" + wrappedLines(base64(stanza.body))
        }
        text += "---"
        let mac = HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: macKey(fileKey))
        text += " \(base64(Array(mac)))\n"
        return Header(bytes: Array(text.utf8), fileKey: fileKey, stanzaTypes: stanzas.map(\.type))
    }

    /// A new header with a new random file key, wrapped for each of `recipients`.
    /// Each plugin's recipients go to one session of that plugin (``AgePlugin/wrap(_:to:)``).
    package static func makeHeader(recipients: [any AgeRecipient]) throws -> Header {
        var fileKey = randomBytes(16)
        defer { wipe(&fileKey) }
        return makeHeader(fileKey: SymmetricKey(data: fileKey), stanzas: try stanzas(fileKey, recipients))
    }

    /// The whole file: `header`, a fresh payload nonce, and `plaintext` in STREAM chunks.
    ///
    /// Reusing a header is safe: each file gets a new random nonce and so a new payload key.
    package static func encrypt(_ plaintext: [UInt8], header: Header) throws -> [UInt8] {
        let nonce = randomBytes(16)
        let key = payloadKey(header.fileKey, nonce: nonce)
        var output = header.bytes + nonce
        output.reserveCapacity(output.count + plaintext.count + (plaintext.count / chunkSize + 1) * tagSize)
        var start = 0
        var counter: UInt64 = 0
        repeat {
            let end = min(start + chunkSize, plaintext.count)
            let last = end == plaintext.count
            let box = try ChaChaPoly.seal(
                plaintext[start..<end], using: key, nonce: chunkNonce(counter, last: last))
            output += box.ciphertext
            output += box.tag
            start = end
            counter += 1
        } while start < plaintext.count
        return output
    }

    // MARK: Reading

    /// The plaintext of `file`, and its header for writing the next version.
    /// - Parameters:
    ///   - known: a header read before; when `file` starts with the same bytes its file key is
    ///     reused, and neither `identities` nor `passphrase` are used.
    ///   - identities: tried on the file's recipient stanzas of their types.
    ///   - passphrase: asked only when scrypt has to run (a passphrase file).
    /// - Throws: ``Failure``, or what `passphrase` throws.
    package static func decrypt(
        _ file: [UInt8], known: Header?, identities: [any AgeIdentity] = [], passphrase: () throws -> [UInt8]
    ) throws -> (plaintext: [UInt8], header: Header) {
        let parsed = try parseHeader(file)
        let headerBytes = Array(file[..<parsed.end])
        let fileKey: SymmetricKey
        var pluginOfKey: String?
        if let known, known.bytes == headerBytes {
            fileKey = known.fileKey
        } else {
            let (key, plugin) = try unwrapFileKey(parsed.stanzas, identities, passphrase)
            fileKey = SymmetricKey(data: key)
            pluginOfKey = plugin
        }
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                parsed.mac, authenticating: file[..<parsed.macStart], using: macKey(fileKey))
        else { throw macMismatch(keyFrom: pluginOfKey) }
        let plaintext = try decryptPayload(file[parsed.end...], fileKey: fileKey)
        return (plaintext, Header(bytes: headerBytes, fileKey: fileKey, stanzaTypes: parsed.stanzas.map(\.type)))
    }

    /// The types of `file`'s recipient stanzas, in order, read from its header alone (nothing is
    /// decrypted): what a tree vault's diff shows of who an item is encrypted to.
    package static func stanzaTypes(_ file: [UInt8]) throws -> [String] {
        try parseHeader(file).stanzas.map(\.type)
    }

    /// The recipient types read besides scrypt.
    static let recipientTypes = ["X25519", AgeSSHEd25519.stanzaType]

    /// The file key: from the scrypt stanza, which must stand alone, or from the first recipient
    /// stanza one of `identities` opens; stanzas of other types are ignored, as the spec asks.
    /// The file key, and the plugin that gave it, if one did.
    private static func unwrapFileKey(
        _ stanzas: [Stanza], _ identities: [any AgeIdentity], _ passphrase: () throws -> [UInt8]
    ) throws -> (key: [UInt8], plugin: String?) {
        if let scrypt = stanzas.first(where: { $0.type == "scrypt" }) {
            guard stanzas.count == 1 else {
                throw Failure.malformed("a passphrase (scrypt) recipient must be the only one")
            }
            return (try unwrapScrypt(scrypt, passphrase: passphrase), nil)
        }
        let types = stanzas.map(\.type)
        let plugins = identities.contains { $0 is AgePlugin.Identity }
        guard plugins || types.contains(where: { AgeRecipientTypes.isRead($0, with: identities) }) else {
            throw Failure.malformed(
                "its recipients are of types this version does not read (\(types.joined(separator: ", ")))")
        }
        guard !identities.isEmpty else { throw Failure.needsIdentity(types) }
        for stanza in stanzas {
            for identity in identities where identity.stanzaType == stanza.type {
                if let key = try identity.unwrap(stanza) { return (key, nil) }
            }
        }
        // Then the plugins, which may ask for a PIN or a touch: each given every stanza.
        return try unwrapWithPlugins(stanzas, identities)
    }

    struct ParsedHeader {
        var stanzas: [Stanza]
        var mac: [UInt8]
        /// Where "---" ends: the MAC covers everything before.
        var macStart: Int
        /// Where the payload starts.
        var end: Int
    }

    static func parseHeader(_ file: [UInt8]) throws -> ParsedHeader {
        var position = 0
        func nextLine() throws -> String {
            guard let newline = file[position...].firstIndex(of: UInt8(ascii: "\n")) else {
                throw Failure.malformed("the header is truncated")
            }
            defer { position = newline + 1 }
            guard let line = String(validating: file[position..<newline], as: UTF8.self) else {
                throw Failure.malformed("the header is not text")
            }
            return line
        }
        let armor = "-----BEGIN AGE ENCRYPTED FILE-----"
        if file.starts(with: armor.utf8) {
            throw Failure.malformed(
                "it is ASCII-armored (age --armor); convert it with 'age -d' and encrypt again without --armor")
        }
        guard file.starts(with: (versionLine + "\n").utf8) else {
            throw Failure.malformed("it is not an age-encryption.org/v1 file")
        }
        _ = try nextLine()
        var stanzas: [Stanza] = []
        var line = try nextLine()
        while line.hasPrefix("-> ") {
            let arguments = line.dropFirst(3).split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            // Each argument is one or more VCHAR (0x21-0x7E), as the spec's grammar says: a CR, a
            // tab or any other byte is refused, not read as part of a name.
            guard !arguments.contains(where: \.isEmpty),
                arguments.allSatisfy({ $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } })
            else {
                throw Failure.malformed("a recipient line is malformed")
            }
            var body = ""
            while true {
                let bodyLine = try nextLine()
                guard bodyLine.count <= 64 else { throw Failure.malformed("a header line is too long") }
                body += bodyLine
                if bodyLine.count < 64 { break }
            }
            guard let bytes = decodeBase64(body) else { throw Failure.malformed("a recipient's body is not base64") }
            stanzas.append(Stanza(arguments: arguments, body: bytes))
            line = try nextLine()
        }
        guard line.hasPrefix("--- "), let mac = decodeBase64(String(line.dropFirst(4))), mac.count == 32 else {
            throw Failure.malformed("the header has no valid MAC line")
        }
        guard !stanzas.isEmpty else { throw Failure.malformed("the header has no recipient") }
        let macLineLength = line.utf8.count + 1
        return ParsedHeader(stanzas: stanzas, mac: mac, macStart: position - macLineLength + 3, end: position)
    }

    private static func decryptPayload(_ payload: ArraySlice<UInt8>, fileKey: SymmetricKey) throws -> [UInt8] {
        guard payload.count >= 16 + tagSize else { throw Failure.malformed("the payload is truncated") }
        let key = payloadKey(fileKey, nonce: payload.prefix(16))
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(payload.count)
        var start = payload.startIndex + 16
        var counter: UInt64 = 0
        while true {
            let remaining = payload.endIndex - start
            let isLast = remaining <= chunkSize + tagSize
            let end = start + min(remaining, chunkSize + tagSize)
            guard end - start >= tagSize else { throw Failure.malformed("the payload is truncated") }
            guard end - start > tagSize || counter == 0 else {
                throw Failure.malformed("the payload ends with an empty chunk, which age v1 does not allow")
            }
            let chunk = payload[start..<end]
            do {
                plaintext += try open(chunk, key: key, nonce: chunkNonce(counter, last: isLast))
            } catch {
                // A full final chunk that opens as a middle one means chunks are missing.
                if isLast, (try? open(chunk, key: key, nonce: chunkNonce(counter, last: false))) != nil {
                    throw Failure.malformed("the payload is truncated")
                }
                throw Failure.malformed("the payload does not authenticate (its bytes were altered)")
            }
            if isLast { return plaintext }
            start = end
            counter += 1
        }
    }

    private static func open(_ chunk: ArraySlice<UInt8>, key: SymmetricKey, nonce: ChaChaPoly.Nonce) throws -> Data {
        let box = try ChaChaPoly.SealedBox(
            nonce: nonce, ciphertext: chunk.dropLast(tagSize), tag: chunk.suffix(tagSize))
        return try ChaChaPoly.open(box, using: key)
    }

    // MARK: Keys

    private static let zeroNonce = [UInt8](repeating: 0, count: 12)

    /// `fileKey` sealed under `key` (ChaCha20-Poly1305, zero nonce), as every stanza body is.
    static func wrap(_ fileKey: [UInt8], with key: SymmetricKey) throws -> [UInt8] {
        let box = try ChaChaPoly.seal(fileKey, using: key, nonce: ChaChaPoly.Nonce(data: zeroNonce))
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// The 16-byte file key in a 32-byte stanza body sealed under `key`; nil when it does not open.
    static func unwrap(_ body: [UInt8], with key: SymmetricKey) -> [UInt8]? {
        guard body.count == 32,
            let box = try? ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: zeroNonce), ciphertext: body.prefix(16), tag: body.suffix(tagSize)),
            let opened = try? ChaChaPoly.open(box, using: key)
        else { return nil }
        return Array(opened)
    }

    private static func macKey(_ fileKey: SymmetricKey) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: fileKey, info: Array("header".utf8), outputByteCount: 32)
    }

    private static func payloadKey(_ fileKey: SymmetricKey, nonce: some DataProtocol) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: fileKey, salt: Array(nonce), info: Array("payload".utf8), outputByteCount: 32)
    }

    /// STREAM's nonce: an 11-byte big-endian chunk counter, then 1 for the last chunk, else 0.
    private static func chunkNonce(_ counter: UInt64, last: Bool) -> ChaChaPoly.Nonce {
        var bytes = [UInt8](repeating: 0, count: 3)
        withUnsafeBytes(of: counter.bigEndian) { bytes += $0 }
        bytes.append(last ? 1 : 0)
        return try! ChaChaPoly.Nonce(data: bytes)  // always 12 bytes
    }
}

extension AgeFile.Header {
    /// A header given by the process that opened it (`unlock` to its holder): its bytes and its
    /// file key, copied from `fileKey` straight into a key of its own (no other copy is made).
    /// Nothing is checked here; a file whose header differs is not opened with it.
    package init(bytes: [UInt8], fileKey: UnsafeRawBufferPointer, stanzaTypes: [String]) {
        self.init(bytes: bytes, fileKey: SymmetricKey(data: fileKey), stanzaTypes: stanzaTypes)
    }

    /// Calls `body` with the file key's bytes (to give it to the holder), and nothing else.
    package func withFileKey<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try fileKey.withUnsafeBytes(body)
    }
}
