internal import CZlib
import FoundationEssentials
import KeychainFormats
import KeychainStore
import KeychainSystem

/// The parts of a KeePass entry that its strings hold in KeePass's own ways: the built-in TOTP of
/// KeePass 2.47+ and the attachments' bytes of a KDBX 3.1 database.
enum KeePassEntryParts {
    /// KeePass's built-in TOTP (`TimeOtp-Secret-Base32`, `-Hex`, `-Base64` or `-UTF8`, with
    /// `TimeOtp-Length`, `TimeOtp-Period`, `TimeOtp-Algorithm`) as an `otpauth://` URI labelled
    /// `label`, its strings taken out of `strings`; nil, and `strings` as they were, when there is
    /// no such secret or its settings are not a TOTP `otp` computes.
    static func timeOTP(_ strings: inout [(key: String, value: String)], label: String) -> String? {
        func value(_ key: String) -> String? { strings.first { $0.key == "TimeOtp-\(key)" }?.value }
        let seed: String
        if let text = value("Secret-Base32") {
            seed = text
        } else if let text = value("Secret-Hex"), let bytes = hexBytes(text.filter { !$0.isWhitespace }) {
            seed = Base32.encode(bytes)
        } else if let text = value("Secret-Base64"), let data = Data(base64Encoded: text.filter { !$0.isWhitespace }) {
            seed = Base32.encode(Array(data))
        } else if let text = value("Secret-UTF8") {
            seed = Base32.encode(Array(text.utf8))
        } else {
            return nil
        }
        // A secret's text is a seed, never a URI of its own.
        guard !seed.lowercased().hasPrefix("otpauth:"), var uri = OTPSeed.uri(seed, label: label) else { return nil }
        if let length = value("Length") {
            guard let digits = Int(length), (6...8).contains(digits) else { return nil }
            uri += "&digits=\(digits)"
        }
        if let period = value("Period") {
            guard let seconds = Int(period), seconds > 0 else { return nil }
            uri += "&period=\(seconds)"
        }
        if let algorithm = value("Algorithm") {
            let names = ["HMAC-SHA-1": "SHA1", "HMAC-SHA-256": "SHA256", "HMAC-SHA-512": "SHA512"]
            guard let name = names[algorithm.uppercased()] else { return nil }
            uri += "&algorithm=\(name)"
        }
        strings.removeAll { $0.key.hasPrefix("TimeOtp-") }
        return uri
    }

    /// The older passwords of an entry from its history (`older`, oldest first, as KeePass keeps
    /// it), in the order they were used: each one once per run of versions that kept it, and not
    /// the current `password` when the newest versions already had it.
    static func previousPasswords(_ older: [String], current password: String) -> [String] {
        var passwords: [String] = []
        for old in older where !old.isEmpty && old != passwords.last { passwords.append(old) }
        if passwords.last == password { passwords.removeLast() }
        return passwords
    }

    /// An attachment of an entry: its name, and its bytes' ID in Meta's binaries or the bytes.
    struct Attachment {
        var name = ""
        var reference: String?
        var inline: (text: String, compressed: Bool)?
    }

    /// Each of `attachments` (by the key of its entry) whose bytes `binaries` (by ID) or the
    /// attachment itself holds, as a file named as the attachment is (` (2)`… after a name an
    /// earlier attachment of the entry has); the others, with why they are not imported.
    static func files(
        of attachments: [(entry: String, attachment: Attachment)], binaries: [String: (text: String, compressed: Bool)]
    ) -> (files: [ManagerFile], missing: [(entry: String, name: String)], reasons: [String]) {
        var result: (files: [ManagerFile], missing: [(entry: String, name: String)], reasons: [String]) = ([], [], [])
        var names: [String: Set<String>] = [:]
        for (entry, attachment) in attachments {
            let stored = attachment.inline ?? attachment.reference.flatMap { binaries[$0] }
            var reason = "its bytes are not in the export (a KDBX 4 database's never are)"
            if let stored, !attachment.name.contains("/"), !attachment.name.isEmpty {
                if let bytes = binary(stored.text, compressed: stored.compressed, limit: maximumSecretSize) {
                    var name = attachment.name
                    var number = 2
                    while names[entry, default: []].contains(name) {
                        name = "\(attachment.name) (\(number))"
                        number += 1
                    }
                    names[entry, default: []].insert(name)
                    result.files.append(ManagerFile(entry: entry, name: name, bytes: bytes))
                    continue
                }
                reason = "its bytes are damaged or larger than 1 MiB, the largest secret"
            } else if stored != nil {
                reason = "its name is empty or holds a /"
            }
            result.missing.append((entry, attachment.name))
            result.reasons.append(reason)
        }
        return result
    }

    /// An attachment's bytes from a KDBX 3.1 export's `<Meta><Binaries><Binary>`: base64, gzip
    /// when `compressed`; nil when they are not, or when they are larger than `limit`.
    static func binary(_ base64: String, compressed: Bool, limit: Int) -> [UInt8]? {
        guard let data = Data(base64Encoded: base64.filter { !$0.isWhitespace }) else { return nil }
        guard compressed else { return data.count <= limit ? Array(data) : nil }
        return gunzip(Array(data), limit: limit)
    }

    /// The bytes `gzip` holds (one gzip member), nil when it is not gzip or holds more than `limit`.
    private static func gunzip(_ gzip: [UInt8], limit: Int) -> [UInt8]? {
        var stream = z_stream()
        // 16 + 15: a gzip header and trailer, the largest window.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: limit + 1)
        var input = gzip
        let status = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        // More than `limit` bytes fill the buffer without reaching the end of the stream.
        guard status == Z_STREAM_END, stream.total_out <= limit else { return nil }
        return Array(output.prefix(Int(stream.total_out)))
    }
}
