/// Arithmetic modulo p = 2^255 - 19, enough to turn an Ed25519 public key into the X25519 public
/// key of the same secret, which age's ssh-ed25519 recipients need and swift-crypto does not
/// offer. Speed does not matter here (one conversion per recipient), clarity does: sixteen 16-bit
/// limbs in Int64, so that no product or sum can overflow.
struct FieldElement: Equatable {
    private var limbs: [Int64]

    private init(limbs: [Int64]) { self.limbs = limbs }

    init(_ small: Int64) {
        limbs = [small] + Array(repeating: 0, count: 15)
        carry()
    }

    /// The element 32 little-endian bytes encode, the top bit ignored (as RFC 7748 asks).
    init(littleEndian bytes: [UInt8]) {
        precondition(bytes.count == 32)
        limbs = (0..<16).map { Int64(bytes[2 * $0]) | Int64(bytes[2 * $0 + 1]) << 8 }
        limbs[15] &= 0x7fff
    }

    /// The canonical encoding: 32 little-endian bytes of the value reduced below p.
    var bytes: [UInt8] {
        var value = self
        value.carry()
        value.carry()
        value.carry()
        for _ in 0..<2 {  // subtract p while the value is at least p
            var reduced = value.limbs
            reduced[0] -= 0xffed
            for index in 1..<16 {
                reduced[index] -= (index == 15 ? 0x7fff : 0xffff) + ((reduced[index - 1] >> 16) & 1)
                reduced[index - 1] &= 0xffff
            }
            let borrowed = (reduced[15] >> 16) & 1
            reduced[15] &= 0xffff
            if borrowed == 0 { value.limbs = reduced }
        }
        return value.limbs.flatMap { [UInt8($0 & 0xff), UInt8($0 >> 8 & 0xff)] }
    }

    static func + (lhs: Self, rhs: Self) -> Self { Self(limbs: zip(lhs.limbs, rhs.limbs).map { $0 + $1 }) }
    static func - (lhs: Self, rhs: Self) -> Self { Self(limbs: zip(lhs.limbs, rhs.limbs).map { $0 - $1 }) }

    static func * (lhs: Self, rhs: Self) -> Self {
        var product = [Int64](repeating: 0, count: 31)
        for i in 0..<16 {
            for j in 0..<16 { product[i + j] += lhs.limbs[i] * rhs.limbs[j] }
        }
        for index in 0..<15 { product[index] += 38 * product[index + 16] }  // 2^256 = 38 (mod p)
        var result = Self(limbs: Array(product[0..<16]))
        result.carry()
        result.carry()
        return result
    }

    /// `self` to the power `exponent` (32 little-endian bytes).
    func power(_ exponent: [UInt8]) -> Self {
        var result = Self(1)
        for bit in (0..<256).reversed() {
            result = result * result
            if exponent[bit / 8] >> (bit % 8) & 1 == 1 { result = result * self }
        }
        return result
    }

    /// The multiplicative inverse (Fermat: self^(p-2)); zero stays zero.
    var inverse: Self { power([0xeb] + Array(repeating: 0xff, count: 30) + [0x7f]) }

    /// Whether the element is a square modulo p (Euler's criterion: self^((p-1)/2) is 0 or 1).
    var isSquare: Bool {
        let criterion = power([0xf6] + Array(repeating: 0xff, count: 30) + [0x3f]).bytes
        return criterion.dropFirst().allSatisfy { $0 == 0 } && criterion[0] <= 1
    }

    /// Moves each limb's overflow into the next, the top one's into the lowest (times 38 / 2).
    private mutating func carry() {
        for index in 0..<16 {
            let overflow = limbs[index] >> 16
            limbs[index] -= overflow << 16
            if index < 15 { limbs[index + 1] += overflow } else { limbs[0] += 38 * overflow }
        }
    }
}

enum Ed25519 {
    /// The Montgomery u-coordinate (the X25519 public key) of the Ed25519 public key `publicKey`,
    /// u = (1 + y) / (1 - y); nil when the 32 bytes are not a point of the curve.
    static func montgomeryU(ofPublicKey publicKey: [UInt8]) -> [UInt8]? {
        guard publicKey.count == 32 else { return nil }
        let one = FieldElement(1)
        let y = FieldElement(littleEndian: publicKey)
        // On the curve -x^2 + y^2 = 1 + d x^2 y^2, x^2 = (y^2 - 1) / (d y^2 + 1) must be a square.
        let d = FieldElement(0) - FieldElement(121_665) * FieldElement(121_666).inverse
        let ySquared = y * y
        guard ((ySquared - one) * (d * ySquared + one).inverse).isSquare, (one - y).bytes != FieldElement(0).bytes
        else { return nil }
        return ((one + y) * (one - y).inverse).bytes
    }
}
