import Glibc
import KeychainSystem

/// Secret bytes of a request (an agent's lock password) in storage of their own, overwritten when
/// the last reference goes: an array in an enum's payload would be copied by every binding of
/// it, and a copy wiped leaves the original in freed memory.
package final class SSHSecretBytes: @unchecked Sendable {
    // @unchecked: the buffer is written only in init and in deinit, which no other reference
    // outlives.
    private let buffer: UnsafeMutableRawBufferPointer

    /// Takes `bytes` and wipes them.
    init(taking bytes: inout [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
        (self.buffer, count) = (buffer, bytes.count)
        wipe(&bytes)
    }

    package let count: Int

    /// A copy for `body`, wiped after it.
    package func withBytes<Result>(_ body: ([UInt8]) throws -> Result) rethrows -> Result {
        var copy = [UInt8](UnsafeRawBufferPointer(rebasing: buffer.prefix(count)))
        defer { wipe(&copy) }
        return try body(copy)
    }

    deinit {
        explicit_bzero(buffer.baseAddress!, buffer.count)
        buffer.deallocate()
    }
}
