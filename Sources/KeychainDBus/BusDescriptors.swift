import Glibc

/// Unix descriptors passed on a bus connection (the `h` type): sent by the peer beside a
/// message's bytes (`SCM_RIGHTS`), once the authentication agreed to them (`NEGOTIATE_UNIX_FD`;
/// logind's `Inhibit` answers with one). Read here with the bytes they come with, close-on-exec.
enum BusDescriptors {
    /// Room for the descriptors of one read: the kernel passes those of one message write at
    /// most, and dbus-daemon lets a message carry 16 (a message whose count does not match what
    /// arrived breaks the stream: ``BusWire`` closes it).
    static let perRead = 64

    /// Reads into `buffer` like `recv`, and appends the descriptors that came with the bytes to
    /// `descriptors`. Returns what `recvmsg` returned.
    static func receive(_ socket: Int32, into buffer: inout [UInt8], _ descriptors: inout [Int32]) -> Int {
        let space = MemoryLayout<cmsghdr>.stride + perRead * MemoryLayout<Int32>.stride
        var control = [UInt8](repeating: 0, count: space)
        let count = buffer.withUnsafeMutableBytes { bytes in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var header = msghdr()
                    header.msg_iov = vectorPointer
                    header.msg_iovlen = 1
                    header.msg_control = controlBytes.baseAddress
                    header.msg_controllen = controlBytes.count
                    let received = recvmsg(socket, &header, Int32(MSG_CMSG_CLOEXEC))
                    if received >= 0 { descriptors += passed(controlBytes.prefix(header.msg_controllen)) }
                    return received
                }
            }
        }
        return count
    }

    /// The descriptors of the `SCM_RIGHTS` messages in a control buffer: each a `cmsghdr`
    /// (length, level, type), its data aligned to the size of a `size_t`.
    private static func passed(_ control: Slice<UnsafeMutableRawBufferPointer>) -> [Int32] {
        let headerSize = MemoryLayout<cmsghdr>.stride
        let alignment = MemoryLayout<Int>.stride
        var descriptors: [Int32] = []
        var offset = 0
        let base = UnsafeRawBufferPointer(rebasing: control)
        while offset + headerSize <= base.count {
            let length = base.loadUnaligned(fromByteOffset: offset, as: Int.self)
            let level = base.loadUnaligned(fromByteOffset: offset + alignment, as: Int32.self)
            let type = base.loadUnaligned(fromByteOffset: offset + alignment + 4, as: Int32.self)
            guard length >= headerSize, offset + length <= base.count else { break }
            if level == SOL_SOCKET && type == Int32(SCM_RIGHTS) {
                for index in 0..<(length - headerSize) / 4 {
                    descriptors.append(
                        base.loadUnaligned(fromByteOffset: offset + headerSize + index * 4, as: Int32.self))
                }
            }
            offset += (length + alignment - 1) / alignment * alignment
        }
        return descriptors
    }

    /// Closes descriptors no one took.
    static func close(_ descriptors: [Int32]) {
        for descriptor in descriptors { Glibc.close(descriptor) }
    }
}
