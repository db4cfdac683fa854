import Glibc

/// Output with every occurrence of some byte strings (``MaskedForms``) replaced by a mask, as it
/// streams: a form split across two writes is still hidden, because the shortest tail that could
/// begin one is held back (never more than the longest form less a byte) until the next write
/// or ``finish(into:)``. Where forms overlap or touch, the whole span they cover becomes one
/// mask, so no part of either shows.
///
/// Every position is looked at once through a filter of the forms' first four bytes (one load
/// and a bit test a byte); only a position that passes is compared with the forms themselves.
package struct MaskingStream: Sendable {
    /// What every hidden span becomes.
    package static let mask = Array("***".utf8)

    private let forms: [UInt32: [[UInt8]]]
    private let filter: [UInt64]
    /// The first one, two and three bytes of every form, packed as ``key(_:count:)`` packs them.
    private let beginnings: [Set<UInt32>]
    private var held: [UInt8] = []

    /// `forms`: each at least four bytes long.
    package init(hiding forms: [[UInt8]]) {
        precondition(forms.allSatisfy { $0.count >= 4 })
        var byStart: [UInt32: [[UInt8]]] = [:]
        var filter = [UInt64](repeating: 0, count: 1024)
        var beginnings: [Set<UInt32>] = [[], [], []]
        for form in forms {
            let start = Self.key(form[...], count: 4)
            byStart[start, default: []].append(form)
            let slot = Self.slot(start)
            filter[slot >> 6] |= 1 << UInt64(slot & 63)
            for count in 1...3 { beginnings[count - 1].insert(Self.key(form[...], count: count)) }
        }
        self.forms = byStart
        self.filter = filter
        self.beginnings = beginnings
    }

    /// Hides `forms` from now on (as ``init(hiding:)``), keeping what is held back.
    package mutating func hide(_ forms: [[UInt8]]) {
        let held = self.held
        self = MaskingStream(hiding: forms)
        self.held = held
    }

    /// Whether some bytes wait for the next write to tell whether they begin a form.
    package var isHolding: Bool { !held.isEmpty }

    /// How many bytes wait so.
    package var heldCount: Int { held.count }

    /// Appends to `output` what `bytes` make ready to be written, masked.
    package mutating func write(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        guard !forms.isEmpty else {
            output.appendBytes(bytes)
            return
        }
        if held.isEmpty {
            let kept = scan(bytes, final: false, into: &output)
            held.appendBytes(UnsafeRawBufferPointer(rebasing: bytes[kept...]))
        } else {
            held.appendBytes(bytes)
            let pending = held
            held = []
            pending.withUnsafeBytes { pending in
                let kept = scan(pending, final: false, into: &output)
                held.appendBytes(UnsafeRawBufferPointer(rebasing: pending[kept...]))
            }
        }
    }

    /// Appends to `output` whatever is held back, masked where it is a whole form: at the end of
    /// the output, or when it has been quiet a while.
    package mutating func finish(into output: inout [UInt8]) {
        let pending = held
        held = []
        pending.withUnsafeBytes { _ = scan($0, final: true, into: &output) }
    }

    /// Appends `bytes` masked to `output` up to the first position that may begin a form the
    /// bytes end inside of (none when `final`), and returns that position.
    private func scan(_ bytes: UnsafeRawBufferPointer, final: Bool, into output: inout [UInt8]) -> Int {
        let count = bytes.count
        var written = 0
        var span: (start: Int, end: Int)? = nil
        var boundary = count
        func close(_ hidden: (start: Int, end: Int)) {
            output.appendBytes(UnsafeRawBufferPointer(rebasing: bytes[written..<hidden.start]))
            output.append(contentsOf: Self.mask)
            written = hidden.end
        }
        filter.withUnsafeBufferPointer { filter in
            var position = 0
            scanning: while position + 4 <= count {
                let start = bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)
                let slot = Self.slot(start)
                if filter[slot >> 6] & (1 << UInt64(slot & 63)) != 0, let candidates = forms[start] {
                    for form in candidates {
                        let available = min(form.count, count - position)
                        let same = form.withUnsafeBytes {
                            memcmp($0.baseAddress!, bytes.baseAddress! + position, available) == 0
                        }
                        guard same else { continue }
                        if available < form.count {
                            if final { continue }
                            boundary = position
                            break scanning
                        }
                        let end = position + form.count
                        if let open = span, position <= open.end {
                            span = (open.start, max(open.end, end))
                        } else {
                            if let open = span { close(open) }
                            span = (position, end)
                        }
                    }
                }
                position += 1
            }
            if !final && boundary == count {
                // A tail shorter than four bytes that begins some form waits for what follows.
                for position in max(0, count - 3)..<count
                where beginnings[count - position - 1].contains(Self.key(bytes[position...], count: count - position)) {
                    boundary = position
                    break
                }
            }
        }
        if let open = span {
            if open.end > boundary {
                boundary = open.start  // it may grow with what follows: decided next time
            } else {
                close(open)
            }
        }
        output.appendBytes(UnsafeRawBufferPointer(rebasing: bytes[written..<boundary]))
        return boundary
    }

    private static func key<Bytes: Collection<UInt8>>(_ bytes: Bytes, count: Int) -> UInt32 {
        bytes.prefix(count).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func slot(_ start: UInt32) -> Int { Int((start &* 0x9E37_79B1) >> 16) }
}

extension [UInt8] {
    /// Appends `bytes` in one copy.
    fileprivate mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
        bytes.withMemoryRebound(to: UInt8.self) { append(contentsOf: $0) }
    }
}
