import KeychainStore

/// How a tree vault names its files: `SERVICE/KEY.age`, each name escaped by one reversible rule.
///
/// A byte is kept when it is an ASCII letter or digit or one of `-_.@+,=~`, except a `.` that
/// begins the name; every other byte (`/`, `%`, a space, control characters, every byte of a
/// non-ASCII character) becomes `%` and two upper-case hex digits. So a name is one file name
/// (a key holding `/` is escaped, not a folder), never hidden (`.recipients` and git's files
/// are the tree's own), the same bytes on every file system and every clone (no Unicode
/// normalisation can merge two names), and only the escaped form of a name is read back as it:
/// two keys never map to one file, and a file of another spelling is not an item.
enum TreeVaultNames {
    /// The suffix of an item's file.
    static let suffix = ".age"
    /// The longest escaped name a file system takes (NAME_MAX), with room for `suffix`.
    static let longestService = 255
    static let longestKey = 255 - suffix.utf8.count
    /// The longest escaped key a signed tree vault takes: its signature's file adds `.sig`.
    static let longestSignedKey = longestKey - 4

    /// The escaped form of `name` (a service's directory, or a key's file without its suffix).
    static func escape(_ name: String) -> String {
        var escaped: [UInt8] = []
        escaped.reserveCapacity(name.utf8.count)
        for (index, byte) in name.utf8.enumerated() {
            if isKept(byte) && !(index == 0 && byte == UInt8(ascii: ".")) {
                escaped.append(byte)
            } else {
                escaped += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// The name `escaped` stands for; nil unless `escaped` is exactly what ``escape(_:)`` makes of
    /// it (lower-case hex, an escaped byte that needs none, a bare `%`, a kept byte that must be
    /// escaped, bytes that are not UTF-8).
    static func unescape(_ escaped: some StringProtocol) -> String? {
        let bytes = Array(escaped.utf8)
        var name: [UInt8] = []
        name.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                    let low = hexValue(bytes[index + 2])
                else { return nil }
                let decoded = high << 4 | low
                if isKept(decoded) && !(name.isEmpty && decoded == UInt8(ascii: ".")) { return nil }
                name.append(decoded)
                index += 3
            } else {
                guard isKept(byte), !(name.isEmpty && byte == UInt8(ascii: ".")) else { return nil }
                name.append(byte)
                index += 1
            }
        }
        guard !name.isEmpty else { return nil }
        return String(validating: name, as: UTF8.self)
    }

    /// The item's path inside the tree, `SERVICE/KEY.age`.
    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when an escaped name is longer than
    ///   a file name may be.
    static func relativePath(service: ServiceName, key: KeychainKey) throws(KeychainError) -> String {
        "\(try directory(of: service))/\(try fileName(of: key))"
    }

    /// The service's directory name.
    static func directory(of service: ServiceName) throws(KeychainError) -> String {
        let escaped = escape(service.rawValue)
        guard escaped.utf8.count <= longestService else {
            throw .invalidName(kind: "service", reason: tooLong("service", escaped.utf8.count, longestService))
        }
        return escaped
    }

    /// The key's file name, with its suffix.
    static func fileName(of key: KeychainKey) throws(KeychainError) -> String {
        let escaped = escape(key.rawValue)
        guard escaped.utf8.count <= longestKey else {
            throw .invalidName(kind: "key", reason: tooLong("key", escaped.utf8.count, longestKey))
        }
        return escaped + suffix
    }

    /// The service a directory name stands for; nil for any other name (`.git`, `.recipients`).
    static func service(directory name: String) -> ServiceName? {
        unescape(name).flatMap { try? ServiceName($0) }
    }

    /// The key a file name stands for; nil for any other name (a temporary file, a `.txt`).
    static func key(fileName name: String) -> KeychainKey? {
        guard name.hasSuffix(suffix) else { return nil }
        return unescape(name.dropLast(suffix.count)).flatMap { try? KeychainKey($0) }
    }

    private static func tooLong(_ kind: String, _ length: Int, _ limit: Int) -> String {
        "a tree vault keeps each \(kind) in a file name of at most \(limit) bytes, and this one takes \(length) "
            + "once escaped (each byte other than a letter, digit or -_.@+,=~ takes three): use a shorter name, "
            + "or a single-file vault"
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func isKept(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: Array("-_.@+,=~".utf8).contains(byte)
        }
    }
}
