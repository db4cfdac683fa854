import Glibc

/// Output with every occurrence of some byte strings (``MaskForms``) replaced by a mask, as it
/// streams: a form split across writes, however many and however small, is still hidden,
/// because the bytes that may begin one (the automaton's open state: never more than the longest
/// form, and the line breaks a wrapped form may hold) are held back until a write shows whether
/// they do, or ``finish(into:)``. Where forms overlap or touch, the whole span they cover becomes
/// one mask, so no part of either shows.
///
/// The bytes go through a ``MaskingAutomaton`` (one step a byte, amortized); where no form is
/// open, only every third or fourth position is looked at (one load and a bit test) until one
/// may be inside a form, and the automaton reads only the bytes where one may begin.
package struct MaskingStream: Sendable {
    /// What every hidden span becomes.
    package static let mask = Array("***".utf8)

    private var automaton: MaskingAutomaton
    private var state = 0
    /// How many bytes have come in, and how many of them have gone out (masked or not).
    private var total = 0
    private var emitted = 0
    /// The bytes from `emitted` to `total`.
    private var held: [UInt8] = []
    /// Where each of the last bytes that moved the automaton stood (a ring of a power of two
    /// above the longest form), so that a form's start is known across the line breaks it holds.
    private var positions: [Int]
    private var moves = 0
    /// The spans of the output to mask that may still grow, in order, apart, from `head` on (a
    /// later form that begins inside the automaton's open state may join some of them).
    private var spans: [(start: Int, end: Int)] = []
    private var head = 0
    /// Where the last mask written ends in the output (a span that touches it goes on in it).
    private var maskedEnd = -1
    /// The line break passed over since the last move: 0 none, 1 a CR, 2 a whole break.
    private var passed = 0
    /// The last position where some form may begin, as far as the filter tells.
    private var mayBegin = -1

    package init(hiding forms: MaskForms) {
        automaton = MaskingAutomaton(plain: forms.plain, acrossLines: forms.acrossLines)
        var size = 16
        while size <= automaton.longestForm { size <<= 1 }
        positions = [Int](repeating: 0, count: size)
    }

    /// `forms`, none across lines: each at least four bytes long.
    package init(hiding forms: [[UInt8]]) {
        self.init(hiding: MaskForms(plain: forms))
    }

    /// Hides `forms` from now on (as ``init(hiding:)``): what is held back is read again with
    /// them, and what that makes ready goes to `output`. (Bytes a pause let go of, by
    /// ``release(into:)``, are not read again: a form they began and that goes on after this
    /// call is not found.)
    package mutating func hide(_ forms: MaskForms, into output: inout [UInt8]) {
        let pending = held
        var fresh = MaskingStream(hiding: forms)
        pending.withUnsafeBytes { fresh.write($0, into: &output) }
        self = fresh
    }

    /// Whether some bytes wait for a later write to tell whether they begin a form.
    package var isHolding: Bool { total > emitted }

    /// How many bytes wait so.
    package var heldCount: Int { total - emitted }

    /// Appends to `output` what `bytes` make ready to be written, masked.
    package mutating func write(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        let start = total
        let count = bytes.count
        if automaton.isEmpty {
            output.appendBytes(bytes)
            total += count
            emitted = total
            return
        }
        scan(bytes, from: start, into: &output)
        total = start + count
        let open = openFrom()
        closeSpans(before: open, bytes, from: start, into: &output)
        if head < spans.count && spans[head].start < open {
            // Up to `open` it is masked whatever follows: the mask goes out now, and the span
            // goes on in it, so that a span as long as the output is never held whole.
            close((spans[head].start, open), bytes, from: start, into: &output)
        }
        emit(upTo: head < spans.count ? min(open, spans[head].start) : open, bytes, from: start, into: &output)
        keep(bytes, from: start)
    }

    /// Appends to `output` whatever is held back, masked where it is a whole form: at the end
    /// of the output. Anything that begins a form begins it anew afterwards.
    package mutating func finish(into output: inout [UInt8]) {
        release(into: &output, all: true)
        state = 0
        passed = 0
    }

    /// After a pause: a span to mask goes out masked, and the bytes held back go out too when
    /// fewer than four bytes of a form are open (less than any secret that is masked: a prompt
    /// that could begin one shows); four or more wait for what follows, or the end. The
    /// automaton keeps its state, so a form the pause cut in two is still masked from here on.
    package mutating func release(into output: inout [UInt8]) {
        release(into: &output, all: automaton.depth[state] < MaskedForms.minimumLength)
    }

    private mutating func release(into output: inout [UInt8], all: Bool) {
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        closeSpans(before: Int.max, none, from: total, into: &output)
        if all { emit(upTo: total, none, from: total, into: &output) }
        keep(none, from: total)
    }

    /// Where the automaton's open state begins in the output: no later form begins before.
    private func openFrom() -> Int {
        let depth = Int(automaton.depth[state])
        return depth == 0 ? total : positions[(moves - depth + 1) & (positions.count - 1)]
    }

    /// Writes the spans that end before `open` (no later form can join them) masked.
    private mutating func closeSpans(
        before open: Int, _ bytes: UnsafeRawBufferPointer, from base: Int, into output: inout [UInt8]
    ) {
        while head < spans.count && spans[head].end < open {
            close(spans[head], bytes, from: base, into: &output)
            head += 1
        }
        if head == spans.count {
            spans.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > spans.count {
            spans.removeFirst(head)
            head = 0
        }
    }

    /// Runs the automaton over `bytes`, the output's bytes from `base` on, and masks each span
    /// that can no longer grow as it is found.
    private mutating func scan(_ bytes: UnsafeRawBufferPointer, from base: Int, into output: inout [UInt8]) {
        let automaton = self.automaton
        let count = bytes.count
        guard let pointer = bytes.baseAddress, count > 0 else { return }
        let mask = positions.count - 1
        var (state, moves, passed, mayBegin) = (self.state, self.moves, self.passed, self.mayBegin)
        let wraps = automaton.wraps
        /// The four bytes from `index` on that are no line break (nil: the bytes end first).
        func unbroken(_ index: Int) -> UInt32? {
            var (key, found, next) = (UInt32(0), 0, index)
            while found < 4 && next < count {
                if bytes[next] != 0x0A && bytes[next] != 0x0D {
                    key |= UInt32(bytes[next]) << (8 * found)
                    found += 1
                }
                next += 1
            }
            return found == 4 ? key : nil
        }
        /// Whether a form may hold the four bytes at `index` (as they are, or without the line
        /// breaks among them where some form wraps) at an offset below `stride`.
        @inline(__always) func holds(_ index: Int) -> Bool {
            let word = (pointer + index).loadUnaligned(as: UInt32.self)
            if automaton.mayHold(word) { return true }
            guard wraps && MaskingAutomaton.holdsBreak(word) else { return false }
            return unbroken(index).map(automaton.mayHold) ?? true
        }
        /// Whether a form may begin at `index` (none that wraps begins with a line break).
        @inline(__always) func begins(_ index: Int) -> Bool {
            let word = (pointer + index).loadUnaligned(as: UInt32.self)
            if automaton.mayBegin(word) { return true }
            guard wraps && MaskingAutomaton.holdsBreak(word) && bytes[index] != 0x0A && bytes[index] != 0x0D else {
                return false
            }
            return unbroken(index).map(automaton.mayBegin) ?? true
        }
        /// Where the first CR or LF from `index` on is (`count`: none), found by memchr.
        func nextBreak(_ index: Int) -> Int {
            let rest = count - index
            let lineFeed = memchr(pointer + index, 0x0A, rest).map { UnsafeRawPointer($0) - pointer } ?? count
            return memchr(pointer + index, 0x0D, lineFeed - index).map { UnsafeRawPointer($0) - pointer } ?? lineFeed
        }
        var lineBreak = -1
        var found: [(start: Int, end: Int, open: Int)] = []
        let stride = automaton.stride
        var index = 0
        var forcedUntil = 0
        positions.withUnsafeMutableBufferPointer { positions in
            while index < count {
                if state == 0 && index >= forcedUntil {
                    // Where no form is open, every `stride`th position is looked at: a form
                    // that begins at `index` or later holds four bytes the filter knows at the
                    // first one within it. Where one may, the automaton starts from the root
                    // up to `stride` - 1 bytes before (or where the bytes end: what follows
                    // decides).
                    var probe = index
                    while probe &+ 4 <= count {
                        if wraps && probe &+ 4 > lineBreak {
                            // Four bytes that may hold a line break: looked at with it passed over.
                            if lineBreak < probe {
                                lineBreak = nextBreak(probe)
                                continue
                            }
                            if holds(probe) { break }
                        } else if automaton.mayHold((pointer + probe).loadUnaligned(as: UInt32.self)) {
                            break
                        }
                        probe &+= stride
                    }
                    index = max(index, probe &- stride &+ 1)
                    forcedUntil = probe &+ 4 <= count ? probe &+ 1 : count
                    if index >= count { break }
                }
                // Each position the automaton reads is looked at through the filter of beginnings;
                // from the root, it reads only where a form may begin.
                if index &+ 4 > count || begins(index) {
                    mayBegin = base + index
                } else if state == 0 {
                    index &+= 1
                    continue
                }
                let byte = bytes[index]
                if state != 0 && (byte == 0x0A || byte == 0x0D) && (byte == 0x0A ? passed < 2 : passed == 0)
                    && automaton.edge(state, byte) == nil
                {
                    // The longest open form that wraps goes on past the break.
                    let wrapping = automaton.wrapping(state)
                    if wrapping != 0 {
                        (state, passed, index) = (wrapping, passed + (byte == 0x0A ? 2 : 1), index &+ 1)
                        continue
                    }
                }
                passed = 0
                state = automaton.next(state, byte)
                moves &+= 1
                positions[moves & mask] = base + index
                let depth = Int(automaton.depth[state])
                if depth < 4 {
                    // No form is this short, and where none begins in these bytes (the filter
                    // says), the automaton starts again from the root: in text whose every
                    // short string begins some form it would otherwise never get back there.
                    if depth > 0 && mayBegin < positions[(moves - depth + 1) & mask] { state = 0 }
                } else if automaton.longest[state] > 0 {
                    let length = Int(automaton.longest[state])
                    found.append(
                        (
                            positions[(moves - length + 1) & mask], base + index + 1,
                            positions[(moves - depth + 1) & mask]
                        ))
                }
                index += 1
            }
        }
        (self.state, self.moves, self.passed, self.mayBegin) = (state, moves, passed, mayBegin)
        for (start, end, open) in found {
            // A form joins every span it touches or overlaps; those before the state's start
            // can no longer grow.
            var merged = (start: start, end: end)
            while spans.count > head, let last = spans.last, last.end >= merged.start {
                merged = (min(last.start, merged.start), max(last.end, merged.end))
                spans.removeLast()
            }
            spans.append(merged)
            closeSpans(before: open, bytes, from: base, into: &output)
        }
    }

    /// Writes what comes before `hidden` and a mask for it, or goes on in the mask last
    /// written where `hidden` touches it.
    private mutating func close(
        _ hidden: (start: Int, end: Int), _ bytes: UnsafeRawBufferPointer, from base: Int, into output: inout [UInt8]
    ) {
        guard hidden.end > emitted else { return }
        if hidden.start > maskedEnd || emitted != maskedEnd {
            emit(upTo: hidden.start, bytes, from: base, into: &output)
            output.append(contentsOf: Self.mask)
        }
        emitted = hidden.end
        maskedEnd = emitted
    }

    /// Writes the output's bytes from `emitted` up to `end`: those held back, then those of
    /// `bytes` (which start at `base`).
    private mutating func emit(
        upTo end: Int, _ bytes: UnsafeRawBufferPointer, from base: Int, into output: inout [UInt8]
    ) {
        guard end > emitted else { return }
        if emitted < base {
            let heldStart = base - held.count
            held.withUnsafeBytes {
                output.appendBytes(
                    UnsafeRawBufferPointer(rebasing: $0[(emitted - heldStart)..<(min(end, base) - heldStart)]))
            }
        }
        if end > base {
            output.appendBytes(UnsafeRawBufferPointer(rebasing: bytes[(max(emitted, base) - base)..<(end - base)]))
        }
        emitted = end
    }

    /// Keeps the bytes from `emitted` on, out of those held and `bytes` (from `base`).
    private mutating func keep(_ bytes: UnsafeRawBufferPointer, from base: Int) {
        let heldStart = base - held.count
        if emitted >= base {
            held.removeAll(keepingCapacity: true)
        } else if emitted > heldStart {
            held.removeFirst(emitted - heldStart)
        }
        if emitted < base + bytes.count {
            held.appendBytes(UnsafeRawBufferPointer(rebasing: bytes[(max(emitted, base) - base)...]))
        }
    }
}

extension [UInt8] {
    /// Appends `bytes` in one copy.
    fileprivate mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
        bytes.withMemoryRebound(to: UInt8.self) { append(contentsOf: $0) }
    }
}
