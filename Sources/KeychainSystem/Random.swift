/// Fills `buffer` from the system's generator (getrandom, through SystemRandomNumberGenerator),
/// eight bytes per call: asking it for a `UInt8` costs a system call per byte (48 in a Secret
/// Service `set`, seen with strace). Not swift-crypto's generator, which would start BoringSSL in
/// every `get`.
package func fillWithSystemRandomBytes(_ buffer: inout [UInt8]) {
    var random = SystemRandomNumberGenerator()
    buffer.withUnsafeMutableBytes { bytes in
        var index = 0
        while index < bytes.count {
            withUnsafeBytes(of: random.next() as UInt64) { word in
                for byte in word where index < bytes.count {
                    bytes[index] = byte
                    index += 1
                }
            }
        }
    }
}
