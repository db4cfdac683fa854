import Glibc

// The byte loop of a MaskingStream: where the automaton reads, and where it may skip.
extension MaskingStream {
    /// Runs the automaton over `bytes`, the output's bytes from `base` on, and masks each span
    /// that can no longer grow as it is found.
    mutating func scan(_ bytes: UnsafeRawBufferPointer, from base: Int, into output: inout [UInt8]) {
        for (start, end, open, _) in matches(in: bytes, from: base) {
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

    /// Runs the automaton over `bytes`, the stream's bytes from `base` on: the forms found, in
    /// the order they end, each the longest that ends there, with where it starts and ends, where
    /// the automaton's open state then starts, and which form it is (its index in the forms the
    /// automaton was made of: ``MaskingAutomaton/form``).
    mutating func matches(
        in bytes: UnsafeRawBufferPointer, from base: Int
    ) -> [(start: Int, end: Int, open: Int, form: Int)] {
        let automaton = self.automaton
        let count = bytes.count
        guard let pointer = bytes.baseAddress, count > 0 else { return [] }
        let mask = positions.count - 1
        var (state, moves, passed, mayBegin) = (self.state, self.moves, self.passed, self.mayBegin)
        let wraps = automaton.wraps
        /// The four bytes from `index` on that are no line break (nil: the bytes end first, or more
        /// breaks come between them than a wrapped form holds, one CR LF between two bytes: then
        /// "may" is the answer, and the automaton reads on). Never more than 10 bytes are looked
        /// at: a run of blank lines costs each position a bounded look, not the rest of the run.
        func unbroken(_ index: Int) -> UInt32? {
            var (key, found, next) = (UInt32(0), 0, index)
            let end = min(count, index + 10)
            while found < 4 && next < end {
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
        /// Where the first CR or LF from `index` on is (`count`: none), found by memchr. Where
        /// each of the two is next is kept and searched for again only once passed: in a run of
        /// lone CRs, a search for an LF that never comes goes to the end of the bytes once, not
        /// once a position (the second attack found that quadratic).
        var (nextLineFeed, nextReturn) = (-1, -1)
        func nextBreak(_ index: Int) -> Int {
            if nextLineFeed < index {
                nextLineFeed =
                    memchr(pointer + index, 0x0A, count - index).map { UnsafeRawPointer($0) - pointer } ?? count
            }
            if nextReturn < index {
                nextReturn =
                    memchr(pointer + index, 0x0D, count - index).map { UnsafeRawPointer($0) - pointer } ?? count
            }
            return min(nextLineFeed, nextReturn)
        }
        var lineBreak = -1
        var found: [(start: Int, end: Int, open: Int, form: Int)] = []
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
                            positions[(moves - depth + 1) & mask], Int(automaton.form[state])
                        ))
                }
                index += 1
            }
        }
        (self.state, self.moves, self.passed, self.mayBegin) = (state, moves, passed, mayBegin)
        return found
    }
}
