import KeychainSystem

extension FramedConnections {
    final class Connection {
        let fd: Int32
        let peer: FramedPeer
        /// What was read of requests not yet carried out, as it came: nothing is allocated
        /// before its bytes arrive, and nothing is copied as it grows.
        var input: [[UInt8]] = []
        var inputCount = 0
        var output: [UInt8] = []
        var written = 0
        /// The request being carried out, if any (nothing more is read until its answer is
        /// sent); cancelled when the client goes away, so that its write writes nothing.
        var underWay: FramedCancellation?
        /// Boot seconds of the last byte read or written.
        var lastActive: Double

        init(fd: Int32, peer: FramedPeer, lastActive: Double) {
            (self.fd, self.peer, self.lastActive) = (fd, peer, lastActive)
        }

        var busy: Bool { underWay != nil }

        /// Whether answers wait unread beyond ``outputBacklog``: nothing more is read or carried
        /// out until the client reads them (one that sends and never reads costs no memory).
        var backlogged: Bool { output.count - written > FramedConnections.outputBacklog }

        /// The first `count` bytes read, taken out of `input`. What is taken is wiped where it
        /// was read into, in place (`input[0]`, never a copy: wiping a second reference to an
        /// array wipes a copy of it, and leaves the bytes in freed memory).
        func take(_ count: Int) -> [UInt8] {
            var taken: [UInt8] = []
            taken.reserveCapacity(count)
            while taken.count < count, !input.isEmpty {
                let part = min(count - taken.count, input[0].count)
                taken += input[0][..<part]
                if part == input[0].count {
                    wipe(&input[0])
                    input.removeFirst()
                } else {
                    let rest = Array(input[0][part...])
                    wipe(&input[0])
                    input[0] = rest
                }
            }
            inputCount -= taken.count
            return taken
        }

        /// The length the next request's first four bytes give, if they have come.
        var announced: Int? {
            guard inputCount >= 4 else { return nil }
            return HolderWire.length(ArraySlice(input.lazy.joined().prefix(4)))
        }
    }
}

/// Whether the client of a request has gone away.
package final class FramedCancellation: Sendable {
    private let cancelled = Locked(false)
    package func cancel() { cancelled.withLock { $0 = true } }
    package var isCancelled: Bool { cancelled.withLock { $0 } }
}
