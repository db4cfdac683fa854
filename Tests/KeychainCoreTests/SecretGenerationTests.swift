import FoundationEssentials
import KeychainSystem
import Testing

@testable import KeychainCore
@testable import KeychainSecrets

/// `generate`'s random secrets: the alphabets, uniformity, and no modulo bias.
@Suite("Random secrets")
struct RandomSecretTests {
    @Test(arguments: RandomSecret.Charset.allCases)
    func everyLengthIsExactAndEveryCharacterIsFromTheAlphabet(_ charset: RandomSecret.Charset) {
        let generator = RandomSecret(charset: charset)
        for length in [0, 1, 2, 31, 32, 33, 1_000, 70_000] {
            let secret = generator.generate(length: length)
            #expect(secret.count == length)
            #expect(Set(secret).isSubset(of: Set(generator.alphabet)))
        }
    }

    @Test func theAlphabetsHaveTheirDocumentedSizes() {
        let sizes = RandomSecret.Charset.allCases.map { ($0, RandomSecret(charset: $0).alphabet.count) }
        #expect(sizes.map(\.1) == [62, 90, 16, 64, 10])
        for charset in RandomSecret.Charset.allCases {
            #expect(Set(charset.alphabet()).count == charset.alphabet().count, "\(charset) repeats a character")
            #expect(
                !charset.alphabet().contains {
                    [UInt8(ascii: "\""), UInt8(ascii: "'"), UInt8(ascii: "\\"), UInt8(ascii: "`"), UInt8(ascii: " ")]
                        .contains($0)
                })
        }
        #expect(RandomSecret(charset: .alnum, unambiguous: true).alphabet.count == 57)
        #expect(RandomSecret(charset: .symbols, unambiguous: true).alphabet.count == 84)
        #expect(RandomSecret(charset: .hex, unambiguous: true).alphabet.count == 16)
    }

    /// Bytes at or above the largest multiple of the alphabet's size are thrown away: for digits,
    /// 250 to 255 would make 0 to 5 likelier. With known bytes, they must be skipped, not folded.
    @Test func bytesThatWouldBiasTheResultAreRejected() {
        var feed: [[UInt8]] = [[255, 250, 249, 3, 251, 10, 0], [252, 253, 254, 255, 9, 19]]
        let secret = RandomSecret(charset: .digits).generate(length: 6) { buffer in
            let next = feed.isEmpty ? [] : feed.removeFirst()
            for index in buffer.indices { buffer[index] = index < next.count ? next[index] : 255 }
        }
        #expect(String(decoding: secret, as: UTF8.self) == "930099")
        // 90 symbols: 256 - 256 % 90 = 180; 180 and above are rejected.
        let symbols = RandomSecret(charset: .symbols)
        let drawn = symbols.generate(length: 2) { buffer in
            for index in buffer.indices { buffer[index] = index == 0 ? 180 : index == 1 ? 179 : 0 }
        }
        #expect(drawn == [symbols.alphabet[179 % 90], symbols.alphabet[0]])
    }

    /// Pearson's chi-square of the character counts against the uniform distribution, from the
    /// system's generator: above the threshold only once in a million honest runs.
    @Test(arguments: [
        (RandomSecret.Charset.digits, 44.81), (.hex, 56.49), (.alnum, 128.52), (.symbols, 167.35),
    ])
    func charactersAreUniformlyDistributed(_ charset: RandomSecret.Charset, threshold: Double) {
        let generator = RandomSecret(charset: charset)
        let sample = generator.generate(length: 400_000)
        var counts = [UInt8: Int]()
        for byte in sample { counts[byte, default: 0] += 1 }
        let expected = Double(sample.count) / Double(generator.alphabet.count)
        let chiSquare = generator.alphabet.reduce(0.0) {
            let observed = Double(counts[$1] ?? 0)
            return $0 + (observed - expected) * (observed - expected) / expected
        }
        // A modulo bias (the first 256 % n characters likelier by one 256th) gives thousands here.
        #expect(chiSquare < threshold, "\(charset): chi-square \(chiSquare)")
    }

    @Test func entropyIsLengthTimesTheLogOfTheAlphabet() {
        #expect(RandomSecret(charset: .hex).entropyBits(length: 32) == 128)
        #expect(RandomSecret(charset: .base64url).entropyBits(length: 32) == 192)
        #expect(abs(RandomSecret(charset: .alnum).entropyBits(length: 32) - 190.54) < 0.01)
    }
}

/// `otp`: RFC 6238's own test vectors, RFC 4648's base32 vectors, and otpauth:// URIs.
@Suite("One-time passwords (TOTP)")
struct OneTimePasswordTests {
    static let seeds: [OneTimePassword.Algorithm: String] = [
        .sha1: "12345678901234567890", .sha256: "12345678901234567890123456789012",
        .sha512: "1234567890123456789012345678901234567890123456789012345678901234",
    ]

    /// RFC 6238, Appendix B: 8 digits, 30 seconds, the ASCII seeds above.
    @Test(arguments: [
        (Int64(59), "94287082", "46119246", "90693936"),
        (1_111_111_109, "07081804", "68084774", "25091201"),
        (1_111_111_111, "14050471", "67062674", "99943326"),
        (1_234_567_890, "89005924", "91819424", "93441116"),
        (2_000_000_000, "69279037", "90698825", "38618901"),
        (20_000_000_000, "65353130", "77737706", "47863826"),
    ])
    func rfc6238Vectors(_ time: Int64, sha1: String, sha256: String, sha512: String) {
        for (algorithm, expected) in [(OneTimePassword.Algorithm.sha1, sha1), (.sha256, sha256), (.sha512, sha512)] {
            let password = OneTimePassword(seed: Array(Self.seeds[algorithm]!.utf8), algorithm: algorithm, digits: 8)
            #expect(password.code(at: time) == expected, "\(algorithm) at \(time)")
            // Six digits are the last six of eight (the same number modulo 10^6).
            var six = password
            six.digits = 6
            #expect(six.code(at: time) == String(expected.suffix(6)))
        }
    }

    @Test(arguments: [
        ("", ""), ("MY======", "f"), ("MZXQ====", "fo"), ("MZXW6===", "foo"), ("MZXW6YQ=", "foob"),
        ("MZXW6YTB", "fooba"), ("MZXW6YTBOI======", "foobar"), ("mzxw 6ytb-oi", "foobar"),
    ])
    func base32DecodesRfc4648Vectors(_ text: String, expected: String) {
        #expect(Base32.decode(text) == Array(expected.utf8))
    }

    @Test(arguments: ["MZ1W", "MZXW=6YTB", "MZXW6YTB!", "ÄÖ"])
    func base32RefusesWhatIsNotBase32(_ text: String) {
        #expect(Base32.decode(text) == nil)
    }

    @Test func urisCarryTheirParametersAndBareSeedsTakeTheDefaults() throws {
        let key = try KeychainKey("github-2fa")
        let seed = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  // base32 of the SHA1 seed above
        let bare = try OneTimePassword(stored: Data((" \(seed.lowercased())\n").utf8), key: key)
        #expect(bare == OneTimePassword(seed: Array(Self.seeds[.sha1]!.utf8)))
        let uri =
            "otpauth://totp/GitHub:alice%40example.com?secret=\(seed)&issuer=GitHub&algorithm=sha256&digits=8&period=60"
        let password = try OneTimePassword(stored: Data(uri.utf8), key: key)
        #expect(password.algorithm == .sha256 && password.digits == 8 && password.period == 60)
        #expect(password.secondsLeft(at: 120) == 60 && password.secondsLeft(at: 179) == 1)
        let upper = try OneTimePassword(stored: Data("OTPAUTH://TOTP/x?SECRET=\(seed)%3D%3D".utf8), key: key)
        #expect(upper.seed == bare.seed)
        let fragment = try OneTimePassword(stored: Data("otpauth://totp/x?secret=\(seed)#anything".utf8), key: key)
        #expect(fragment.seed == bare.seed)
    }

    @Test(arguments: [
        ("otpauth://hotp/x?secret=GEZDGNBV&counter=1", "counter-based (HOTP)"),
        ("otpauth://totp/x?issuer=GitHub", "without its secret="),
        ("otpauth://totp/x", "without parameters"),
        ("otpauth:totp/x?secret=GEZDGNBV", "no //"),
        ("otpauth://totp/x?secret=GEZ1", "not base32"),
        ("otpauth://totp/x?secret=GEZDGNBV&digits=9", "digits="),
        ("otpauth://totp/x?secret=GEZDGNBV&digits=6&digits=8", "repeats"),
        ("otpauth://totp/x?secret=GEZDGNBV&period=0", "period="),
        ("otpauth://totp/x?secret=GEZDGNBV&period=99999999999999999999", "period="),
        ("otpauth://totp/x?secret=GEZDGNBV&algorithm=MD5", "algorithm 'MD5'"),
        ("otpauth://totp/x?secret=%ZZ", "percent-encoding"),
        ("otpauth://steam/x?secret=GEZDGNBV", "unknown type"),
        ("hunter2!", "neither an otpauth"),
        ("====", "empty TOTP seed"),
    ])
    func malformedSeedsAreRefusedWithoutRepeatingThem(_ text: String, reason: String) throws {
        let key = try KeychainKey("k")
        #expect {
            try OneTimePassword(stored: Data(text.utf8), key: key)
        } throws: { error in
            guard case .notOneTimePassword(_, let message) = error as? KeychainError else { return false }
            return message.contains(reason) && !message.contains("GEZDGNBV") && !message.contains("hunter2")
        }
    }
}
