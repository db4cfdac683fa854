import Glibc
import KeychainSystem

/// The session bus socket ``BusWire`` opens, the way sd-bus opens one: the whole authentication
/// in one write (`AUTH EXTERNAL` with our uid, then `BEGIN`), one answer read with the first
/// reply, and `Hello` sent without waiting for its reply, so that the first request follows it at
/// once. GDBus's own connection (`g_bus_get`) asks `AUTH` with no mechanism first, then sends
/// `EXTERNAL`, `DATA` and `NEGOTIATE_UNIX_FD`, each waiting for its answer, and waits for Hello's
/// reply: five round trips to the bus before the first request (measured in C, interleaved runs
/// of a connect and one search: this way is the faster).
///
/// Only a Unix socket named first in `$DBUS_SESSION_BUS_ADDRESS` by `path=` or `abstract=` is
/// opened here, and only a plain `OK` is taken; anything else (another transport, an unset
/// variable, a bus that refuses EXTERNAL) goes to GIO's connection, which knows them all. The
/// holder's sleep watch opens the system bus's socket the same way (and asks for descriptors).
package enum SessionBusSocket {
    /// The first address of a D-Bus address list when it is a Unix socket by path or abstract
    /// name: the bytes of `sun_path` (an abstract name after a NUL) and the server's GUID if given.
    package struct Endpoint: Equatable {
        let socketPath: [UInt8]
        let guid: String?

        package init?(_ addresses: String) {
            guard let first = addresses.split(separator: ";", omittingEmptySubsequences: false).first,
                first.hasPrefix("unix:")
            else { return nil }
            var path: [UInt8]?
            var guid: String?
            for pair in first.dropFirst(5).split(separator: ",") {
                guard let equals = pair.firstIndex(of: "="),
                    let value = Self.unescaped(pair[pair.index(after: equals)...])
                else { return nil }
                switch pair[..<equals] {
                case "path" where path == nil && !value.isEmpty && !value.contains(0): path = value
                case "abstract" where path == nil && !value.contains(0): path = [0] + value
                case "guid" where guid == nil: guid = String(decoding: value, as: UTF8.self)
                default: return nil  // tmpdir, dir, runtime: for servers, or for GIO to resolve
                }
            }
            // sun_path holds 108 bytes, the terminating NUL of a path included.
            guard let path, path.count < 108 else { return nil }
            (socketPath, self.guid) = (path, guid)
        }

        /// Whether the bus's answer to our authentication (its line without CRLF) is OK, with the
        /// GUID the address names, if it names one.
        func accepts(_ answer: String) -> Bool {
            answer.hasPrefix("OK ") && guid.map { answer.dropFirst(3) == $0 } ?? true
        }

        /// The bytes of a D-Bus address value: `%XX` is the byte XX; nil for a malformed escape.
        private static func unescaped(_ value: Substring) -> [UInt8]? {
            var bytes: [UInt8] = []
            var rest = value.utf8[...]
            while let byte = rest.popFirst() {
                guard byte == UInt8(ascii: "%") else {
                    bytes.append(byte)
                    continue
                }
                guard rest.count >= 2, let decoded = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(decoded)
                rest = rest.dropFirst(2)
            }
            return bytes
        }
    }

    /// A socket connected to `endpoint`, non-blocking from the start, so that neither a full
    /// listen queue nor a silent bus can hold the caller past the operation's limit; nil when
    /// nothing listens there.
    package static func connect(_ endpoint: Endpoint) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue | SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard withUnixSocketAddress(endpoint.socketPath, { Glibc.connect(fd, $0, $1) }) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// The credentials byte, then EXTERNAL with our uid (its decimal digits, hex-encoded) and
    /// BEGIN behind it: the bus answers once, with OK and its GUID. `descriptors`: NEGOTIATE_UNIX_FD
    /// before BEGIN, which the bus answers on a line of its own (AGREE_UNIX_FD, or ERROR).
    package static func authentication(descriptors: Bool = false) -> [UInt8] {
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()
        let negotiate = descriptors ? "NEGOTIATE_UNIX_FD\r\n" : ""
        return [0] + Array("AUTH EXTERNAL \(uid)\r\n\(negotiate)BEGIN\r\n".utf8)
    }
}
