import Crypto
import FoundationEssentials
import KeychainStore
import KeychainSystem

/// A time-based one-time password generator (TOTP, RFC 6238): the seed, the hash, the number of
/// digits and the period, read from what a service hands out: an `otpauth://totp/…` URI (the
/// text inside its QR code) or the bare base32 seed (SHA1, 6 digits, 30 seconds).
public struct OneTimePassword: Sendable, Equatable {
    public enum Algorithm: String, CaseIterable, Sendable {
        case sha1 = "SHA1"
        case sha256 = "SHA256"
        case sha512 = "SHA512"
    }

    /// The shared seed (the base32 text decoded).
    public var seed: [UInt8]
    public var algorithm: Algorithm
    /// How many digits a code has: 6 to 8.
    public var digits: Int
    /// How many seconds a code lasts: 1 to 86,400.
    public var period: Int

    public static let digitRange = 6...8
    public static let periodRange = 1...86_400

    public init(seed: [UInt8], algorithm: Algorithm = .sha1, digits: Int = 6, period: Int = 30) {
        precondition(!seed.isEmpty && Self.digitRange.contains(digits) && Self.periodRange.contains(period))
        (self.seed, self.algorithm, self.digits, self.period) = (seed, algorithm, digits, period)
    }

    /// Reads a stored secret: an `otpauth://totp/LABEL?secret=…` URI, or a base32 seed (spaces,
    /// hyphens and `=` padding allowed, any case), or an entry of several lines holding an
    /// `otpauth://` line. Surrounding white space is ignored.
    /// - Throws: ``KeychainError/notOneTimePassword(key:reason:)`` saying what is wrong, never repeating the secret.
    public init(stored: Data, key: KeychainKey) throws(KeychainError) {
        guard let text = String(validating: stored, as: UTF8.self) else {
            throw .notOneTimePassword(key: key.rawValue, reason: "is not text, so not a TOTP seed or otpauth:// URI")
        }
        do throws(ParseError) {
            // An entry of several lines (pass's layout, what import stores): its first
            // otpauth:// line, as pass-otp reads one.
            let trimmed = String(text.trimming())
            let lines = trimmed.split(whereSeparator: \.isNewline)
            let line = lines.count > 1 ? lines.first { $0.hasPrefix("otpauth://") } : nil
            // An entry whose source held a TOTP that is no seed (a Steam code) keeps it as a field.
            let entry = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).dropFirst()
            if line == nil, entry.contains(where: { $0.hasPrefix("otp: ") }) {
                throw ParseError(
                    reason: "has an otp field that is no TOTP seed this version computes (a Steam or HOTP code?); "
                        + "get --field otp prints it as the source had it")
            }
            self = try Self.parse(line.map { String($0.trimming()) } ?? trimmed)
        } catch {
            throw .notOneTimePassword(key: key.rawValue, reason: error.reason)
        }
    }

    /// The code for the Unix time `time` (seconds since 1970), zero-padded to ``digits``.
    public func code(at time: Int64) -> String {
        precondition(time >= 0)
        let counter = UInt64(time) / UInt64(period)
        let message = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
        let key = SymmetricKey(data: seed)
        let mac: [UInt8]
        switch algorithm {
        case .sha1: mac = Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: key))
        case .sha256: mac = Array(HMAC<SHA256>.authenticationCode(for: message, using: key))
        case .sha512: mac = Array(HMAC<SHA512>.authenticationCode(for: message, using: key))
        }
        // RFC 4226's dynamic truncation: 31 bits from the offset the last nibble names.
        let offset = Int(mac[mac.count - 1] & 0x0f)
        let value = mac[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
        var modulus: UInt32 = 1
        for _ in 0..<digits { modulus *= 10 }
        let number = String(value % modulus)
        return String(repeating: "0", count: digits - number.count) + number
    }

    /// The seconds the code for `time` stays valid: 1 to ``period``.
    public func secondsLeft(at time: Int64) -> Int {
        period - Int(time % Int64(period))
    }

    struct ParseError: Error {
        var reason: String
    }

    static func parse(_ text: String) throws(ParseError) -> OneTimePassword {
        guard text.lowercased().hasPrefix("otpauth:") else {
            guard let seed = Base32.decode(text) else {
                throw ParseError(
                    reason: "is neither an otpauth://totp/ URI nor a base32 seed (letters A-Z and digits 2-7)")
            }
            guard !seed.isEmpty else { throw ParseError(reason: "is an empty TOTP seed") }
            return OneTimePassword(seed: seed)
        }
        // A fragment (#…) is not part of the parameters.
        let rest = text.dropFirst("otpauth:".count).prefix { $0 != "#" }
        guard rest.hasPrefix("//") else { throw ParseError(reason: "is not an otpauth:// URI (no //)") }
        let afterScheme = rest.dropFirst(2)
        let type = afterScheme.prefix { $0 != "/" && $0 != "?" }.lowercased()
        guard type == "totp" else {
            throw ParseError(
                reason: type == "hotp"
                    ? "is a counter-based (HOTP) URI; only time-based ones (otpauth://totp/) are supported"
                    : "is an otpauth URI of unknown type '\(escapedForDisplay(String(type.prefix(16))))', not totp")
        }
        guard
            let query = afterScheme.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                .dropFirst().first
        else { throw ParseError(reason: "is an otpauth URI without parameters (no ?secret=)") }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(parts[0])?.lowercased(),
                let value = percentDecoded(parts.count > 1 ? parts[1] : "")
            else { throw ParseError(reason: "is an otpauth URI with bad percent-encoding") }
            guard parameters.updateValue(value, forKey: name) == nil else {
                throw ParseError(reason: "is an otpauth URI that repeats the parameter '\(escapedForDisplay(name))'")
            }
        }
        guard let secret = parameters["secret"] else {
            throw ParseError(reason: "is an otpauth URI without its secret= parameter")
        }
        guard let seed = Base32.decode(secret), !seed.isEmpty else {
            throw ParseError(reason: "is an otpauth URI whose secret= is not base32 (letters A-Z and digits 2-7)")
        }
        var password = OneTimePassword(seed: seed)
        if let name = parameters["algorithm"] {
            guard let algorithm = Algorithm(rawValue: name.uppercased()) else {
                throw ParseError(
                    reason: "is an otpauth URI with algorithm '\(escapedForDisplay(String(name.prefix(16))))'; "
                        + "SHA1, SHA256 and SHA512 are supported")
            }
            password.algorithm = algorithm
        }
        if let value = parameters["digits"] {
            guard let digits = Int(value), digitRange.contains(digits) else {
                throw ParseError(reason: "is an otpauth URI with digits= other than 6, 7 or 8")
            }
            password.digits = digits
        }
        if let value = parameters["period"] {
            guard let period = Int(value), periodRange.contains(period) else {
                throw ParseError(reason: "is an otpauth URI whose period= is not 1 to 86400 seconds")
            }
            password.period = period
        }
        return password
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard input.count >= 2, let value = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                input = input.dropFirst(2)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
