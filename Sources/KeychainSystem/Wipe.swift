import FoundationEssentials
import Glibc

/// Overwrites `bytes` with zeros in place, in a way the optimizer may not drop (`explicit_bzero`):
/// for a buffer of ours that held a secret (a decrypted or padded plaintext) before it is freed.
/// Copies Swift made earlier (an array grown, a value passed on) are not reached.
package func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        explicit_bzero(base, buffer.count)
    }
}

/// `wipe` for a `Data`: overwrites its bytes in place when this is the only
/// reference to them (a `Data` shared with another holder is copied first, and the copy wiped).
package func wipe(_ data: inout Data) {
    data.withUnsafeMutableBytes { buffer in
        guard let base = buffer.baseAddress else { return }
        explicit_bzero(base, buffer.count)
    }
}

/// Overwrites the storage of `bytes` itself, however many arrays share it (``wipe(_:)`` on a
/// shared array wipes a copy of it and leaves the storage): for a secret held by a value that is
/// copied (a struct's field), wiped once its last user is done with it. No array may be read
/// for its contents afterwards.
package func wipeShared(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return }
        explicit_bzero(UnsafeMutableRawPointer(mutating: base), buffer.count)
    }
}

extension [UInt8] {
    /// Whether this array and `other` are one storage (one was copied from the other and neither
    /// changed since): a buffer converted from another, or the same one given back, is told apart
    /// before the converted one is wiped.
    package func sharesStorage(with other: [UInt8]) -> Bool {
        withUnsafeBufferPointer { mine in other.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
    }
}
