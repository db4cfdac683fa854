/// Bech32 (BIP173), the encoding of age's keys: `age1…` recipients and `AGE-SECRET-KEY-1…`
/// identities. No Swift package of the ecosystem offers it; it is small.
enum Bech32 {
    private static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var checksum: UInt32 = 1
        for value in values {
            let top = checksum >> 25
            checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
            for index in 0..<5 where (top >> UInt32(index)) & 1 == 1 { checksum ^= generator[index] }
        }
        return checksum
    }

    private static func expanded(_ hrp: [UInt8]) -> [UInt8] { hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 } }

    /// `data` (bytes) under the human-readable part `hrp`, in lower case.
    static func encode(hrp: String, data: [UInt8]) -> String {
        let values = convertBits(data, from: 8, to: 5, pad: true)!
        let hrpBytes = Array(hrp.lowercased().utf8)
        let checksum = polymod(expanded(hrpBytes) + values + [0, 0, 0, 0, 0, 0]) ^ 1
        let check = (0..<6).map { UInt8((checksum >> (5 * (5 - UInt32($0)))) & 31) }
        return String(
            decoding: hrpBytes + [UInt8(ascii: "1")] + (values + check).map { charset[Int($0)] }, as: UTF8.self)
    }

    /// The human-readable part (lower case) and the bytes of `text`; nil when it is not valid
    /// Bech32: mixed case, a bad character or checksum, or bits left over.
    static func decode(_ text: String) -> (hrp: String, data: [UInt8])? {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ (33...126).contains($0) }) else { return nil }
        let lower = text.lowercased()
        guard text == lower || text == text.uppercased() else { return nil }
        let chars = Array(lower.utf8)
        guard let separator = chars.lastIndex(of: UInt8(ascii: "1")), separator >= 1, chars.count - separator >= 7
        else { return nil }
        var values: [UInt8] = []
        for char in chars[(separator + 1)...] {
            guard let value = charset.firstIndex(of: char) else { return nil }
            values.append(UInt8(value))
        }
        let hrp = Array(chars[..<separator])
        guard polymod(expanded(hrp) + values) == 1,
            let data = convertBits(Array(values.dropLast(6)), from: 5, to: 8, pad: false)
        else { return nil }
        return (String(decoding: hrp, as: UTF8.self), data)
    }

    private static func convertBits(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0
        var bits = 0
        var result: [UInt8] = []
        let maximum = (1 << to) - 1
        for value in data {
            guard Int(value) >> from == 0 else { return nil }
            accumulator = (accumulator << from) | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                result.append(UInt8((accumulator >> bits) & maximum))
            }
        }
        if pad {
            if bits > 0 { result.append(UInt8((accumulator << (to - bits)) & maximum)) }
        } else if bits >= from || (accumulator << (to - bits)) & maximum != 0 {
            return nil
        }
        return result
    }
}
