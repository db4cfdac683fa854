import Glibc
import KeychainSystem

/// A new random secret: `length` characters drawn uniformly from a ``Charset`` with the system's
/// generator (getrandom), by rejection sampling: a random byte that would make some characters
/// likelier than others (one at or above the largest multiple of the alphabet's size) is thrown
/// away, never folded back with a modulo.
public struct RandomSecret: Sendable {
    /// The characters a secret is drawn from.
    public enum Charset: String, CaseIterable, Sendable {
        /// Letters and digits (62).
        case alnum
        /// Letters, digits and punctuation that needs no quoting in most configuration files:
        /// no quote, backslash, backtick or space (90).
        case symbols
        /// Lowercase hexadecimal digits (16).
        case hex
        /// The URL- and file-name-safe base64 alphabet of RFC 4648: letters, digits, - and _ (64).
        case base64url
        /// Decimal digits (10): PINs.
        case digits

        static let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        static let decimal = Array("0123456789".utf8)
        /// Characters easily mistaken for another in common fonts.
        public static let ambiguous = Set("0O1lI|".utf8)

        /// The alphabet, without the ``ambiguous`` characters when `unambiguous` (for alnum and
        /// symbols only: hex, base64url and digits keep their whole alphabet, or they would not
        /// be what they are named).
        public func alphabet(unambiguous: Bool = false) -> [UInt8] {
            let all: [UInt8]
            switch self {
            case .alnum: all = Self.letters + Self.decimal
            case .symbols: all = Self.letters + Self.decimal + Array("!#$%&()*+,-./:;<=>?@[]^_{|}~".utf8)
            case .hex: all = Array("0123456789abcdef".utf8)
            case .base64url: all = Self.letters + Self.decimal + Array("-_".utf8)
            case .digits: all = Self.decimal
            }
            return unambiguous && allowsUnambiguous ? all.filter { !Self.ambiguous.contains($0) } : all
        }

        /// Whether dropping the ambiguous characters leaves the charset what it is named.
        public var allowsUnambiguous: Bool { self == .alnum || self == .symbols }
    }

    /// The characters drawn from, each equally likely.
    public let alphabet: [UInt8]

    public init(charset: Charset, unambiguous: Bool = false) {
        alphabet = charset.alphabet(unambiguous: unambiguous)
    }

    /// A secret of `length` characters from the system's generator.
    public func generate(length: Int) -> [UInt8] {
        generate(length: length, random: fillWithSystemRandomBytes)
    }

    /// A secret of `length` characters drawn with `random`, which fills its buffer with random
    /// bytes (a test's known bytes).
    package func generate(length: Int, random: (inout [UInt8]) -> Void) -> [UInt8] {
        precondition(length >= 0 && alphabet.count > 1 && alphabet.count <= 256)
        // Bytes at or above `limit` would favour the first 256 % n characters: rejected.
        let limit = 256 - 256 % alphabet.count
        var secret: [UInt8] = []
        secret.reserveCapacity(length)
        var buffer = [UInt8](repeating: 0, count: min(max(length + length / 2, 16), 65_536))
        defer { wipe(&buffer) }
        while secret.count < length {
            random(&buffer)
            for byte in buffer where Int(byte) < limit {
                secret.append(alphabet[Int(byte) % alphabet.count])
                if secret.count == length { break }
            }
        }
        return secret
    }

    /// The strength of a secret of `length` characters: length × log2 of the alphabet's size.
    public func entropyBits(length: Int) -> Double {
        Double(length) * log2(Double(alphabet.count))
    }
}
