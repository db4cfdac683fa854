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

    var automaton: MaskingAutomaton
    var state = 0
    /// How many bytes have come in, and how many of them have gone out (masked or not).
    private var total = 0
    private var emitted = 0
    /// The bytes from `emitted` to `total`.
    private var held: [UInt8] = []
    /// Where each of the last bytes that moved the automaton stood (a ring of a power of two
    /// above the longest form), so that a form's start is known across the line breaks it holds.
    var positions: [Int]
    var moves = 0
    /// The spans of the output to mask that may still grow, in order, apart, from `head` on (a
    /// later form that begins inside the automaton's open state may join some of them).
    var spans: [(start: Int, end: Int)] = []
    var head = 0
    /// Where the last mask written ends in the output (a span that touches it goes on in it).
    private var maskedEnd = -1
    /// The line break passed over since the last move: 0 none, 1 a CR, 2 a whole break.
    var passed = 0
    /// The last position where some form may begin, as far as the filter tells.
    var mayBegin = -1
    /// The bytes of the open state that a pause let go of, from `releasedStart` on: what
    /// ``hide(_:into:)`` reads again with them.
    private var released: [UInt8] = []
    private var releasedStart = 0

    package init(hiding forms: MaskForms) {
        self.init(automaton: MaskingAutomaton(plain: forms.plain, acrossLines: forms.acrossLines))
    }

    /// A stream through an automaton made already (another stream's: ``SecretFinder``'s files).
    init(automaton: MaskingAutomaton) {
        self.automaton = automaton
        var size = 16
        while size <= automaton.longestForm { size <<= 1 }
        positions = [Int](repeating: 0, count: size)
    }

    /// `forms`, none across lines: each at least four bytes long.
    package init(hiding forms: [[UInt8]]) {
        self.init(hiding: MaskForms(plain: forms))
    }

    /// Hides `forms` from now on (as ``init(hiding:)``): what is held back is read again with
    /// them, and what that makes ready goes to `output`; so are the bytes of a form begun that a
    /// pause let go of (``release(into:)``), without being written again.
    package mutating func hide(_ forms: MaskForms, into output: inout [UInt8]) {
        var fresh = MaskingStream(hiding: forms)
        if !released.isEmpty {
            var written: [UInt8] = []
            released.withUnsafeBytes { fresh.write($0, into: &written) }
            fresh.emitted = fresh.total
            fresh.held = []
            (fresh.released, fresh.releasedStart) = (released, 0)
        }
        held.withUnsafeBytes { fresh.write($0, into: &output) }
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
        if open >= releasedStart + released.count {
            released = []
        } else if open > releasedStart {
            released.removeFirst(open - releasedStart)
            releasedStart = open
        }
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
        if all {
            // (The bytes the open state began before `emitted` are released already.)
            let open = openFrom()
            released = open >= emitted ? Array(held.suffix(total - open)) : released + held
            releasedStart = total - released.count
            emit(upTo: total, none, from: total, into: &output)
        }
        keep(none, from: total)
    }

    /// Where the automaton's open state begins in the output: no later form begins before.
    private func openFrom() -> Int {
        let depth = Int(automaton.depth[state])
        return depth == 0 ? total : positions[(moves - depth + 1) & (positions.count - 1)]
    }

    /// Writes the spans that end before `open` (no later form can join them) masked.
    mutating func closeSpans(
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

    /// Writes what comes before `hidden` and a mask for it, or goes on in the mask last
    /// written where `hidden` touches it.
    mutating func close(
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
