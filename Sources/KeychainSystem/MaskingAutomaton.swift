import Glibc

/// Every form to hide, as one Aho-Corasick automaton: one step a byte (amortized over the
/// failure links) however many forms there are and however long or repetitive they are, so the
/// cost of masking grows with the output alone, never with output × form length.
///
/// State 0 is the root (no byte of any form open). A state stands for the longest end of the
/// output read so far that begins some form; `longest` is the longest form that ends
/// there. Forms given as `acrossLines` (base64, which encoders wrap) may have a line break (LF or
/// CRLF) between any two of their bytes: ``wrapping(_:)`` finds the state that passes one over.
///
/// Immutable once made; its tables are plain memory, so that the byte loop reads them without
/// bounds checks or reference counting.
final class MaskingAutomaton: @unchecked Sendable {
    let count: Int
    /// The longest form, in bytes.
    let longestForm: Int
    let depth: UnsafeMutablePointer<Int32>
    /// The longest form that ends each state's string (0: none).
    let longest: UnsafeMutablePointer<Int32>
    /// Which form that is: its index in `plain` + `acrossLines` as given (-1: none).
    let form: UnsafeMutablePointer<Int32>
    /// Whether a line break is passed over in this state (one inside a form that wraps).
    let passesBreaks: UnsafeMutablePointer<Bool>
    private let fail: UnsafeMutablePointer<Int32>
    /// The root's 256 transitions (-1: none); every state's edges, sorted, from `first[state]`.
    private let rootNext: UnsafeMutablePointer<Int32>
    private let first: UnsafeMutablePointer<Int32>
    private let edgeBytes: UnsafeMutablePointer<UInt8>
    private let edgeTargets: UnsafeMutablePointer<Int32>
    /// Every form's first four bytes: where the four bytes at a position (its first four that
    /// are no line break, where some form wraps) are not among them, no form begins there.
    private let starts: KeyFilter
    /// Every form's four bytes at each offset below ``stride``: looking at every `stride`th
    /// position finds every form, since each holds one of them at the first position looked at.
    private let windows: KeyFilter
    /// How far apart the positions looked at through `windows` are: at most 4, and 2 less than
    /// the shortest form, so that each form holds the four bytes at the first one within it (or,
    /// one of that length, its last three and the byte that follows: all 256 are keys).
    let stride: Int
    /// Whether some form wraps across lines.
    let wraps: Bool

    init(plain: [[UInt8]], acrossLines: [[UInt8]]) {
        // Sorted, a form's next state is either its parent's last child so far or new: the trie
        // is built without lookups, each state's children as a list (first child, next sibling).
        let forms = (plain.map { ($0, false) } + acrossLines.map { ($0, true) }).enumerated().map {
            ($0.element.0, $0.element.1, Int32($0.offset))
        }
        .sorted { $0.0.lexicographicallyPrecedes($1.0) }
        var byte: [UInt8] = [0]
        var firstChild: [Int32] = [-1]
        var lastChild: [Int32] = [-1]
        var sibling: [Int32] = [-1]
        var terminal: [Int32] = [-1]
        var passes: [Bool] = [false]
        let most = forms.reduce(1) { $0 + $1.0.count }  // states at most
        byte.reserveCapacity(most)
        firstChild.reserveCapacity(most)
        lastChild.reserveCapacity(most)
        sibling.reserveCapacity(most)
        terminal.reserveCapacity(most)
        passes.reserveCapacity(most)
        var keys: Set<UInt32> = []
        var windowKeys: Set<UInt32> = []
        let stride = min(4, (forms.map(\.0.count).min() ?? 6) - 2)
        for (form, wraps, index) in forms {
            precondition(form.count >= 4)
            var state = 0
            for value in form {
                if wraps && state != 0 { passes[state] = true }
                let last = Int(lastChild[state])
                if last >= 0 && byte[last] == value {
                    state = last
                    continue
                }
                let new = byte.count
                byte.append(value)
                firstChild.append(-1)
                lastChild.append(-1)
                sibling.append(-1)
                terminal.append(-1)
                passes.append(false)
                if last >= 0 { sibling[last] = Int32(new) } else { firstChild[state] = Int32(new) }
                lastChild[state] = Int32(new)
                state = new
            }
            terminal[state] = index
            keys.insert(Self.key(form))
            for offset in 0..<stride {
                if offset + 4 <= form.count {
                    windowKeys.insert(Self.key(form[offset...]))
                } else {  // a form of `stride` + 2 bytes: its last three and whatever byte follows
                    for next in UInt8.min...UInt8.max { windowKeys.insert(Self.key(form[offset...] + [next])) }
                }
            }
        }
        self.stride = stride
        wraps = !acrossLines.isEmpty
        let count = byte.count
        self.count = count
        longestForm = forms.map(\.0.count).max() ?? 0
        depth = .allocate(capacity: count)
        longest = .allocate(capacity: count)
        form = .allocate(capacity: count)
        passesBreaks = .allocate(capacity: count)
        passesBreaks.initialize(from: passes, count: count)
        fail = .allocate(capacity: count)
        rootNext = .allocate(capacity: 256)
        rootNext.initialize(repeating: -1, count: 256)
        first = .allocate(capacity: count + 1)
        edgeBytes = .allocate(capacity: max(1, count - 1))
        edgeTargets = .allocate(capacity: max(1, count - 1))
        var edges = 0
        for state in 0..<count {
            first[state] = Int32(edges)
            var next = firstChild[state]
            while next >= 0 {
                edgeBytes[edges] = byte[Int(next)]
                edgeTargets[edges] = next
                if state == 0 { rootNext[Int(byte[Int(next)])] = next }
                edges += 1
                next = sibling[Int(next)]
            }
        }
        first[count] = Int32(edges)
        starts = KeyFilter(keys)
        windows = KeyFilter(windowKeys)
        // Depths, failure links and longest ends, breadth first (a state's link is shallower).
        depth[0] = 0
        fail[0] = 0
        longest[0] = 0
        form[0] = -1
        var queue = [0]
        queue.reserveCapacity(count)
        var head = 0
        while head < queue.count {
            let state = queue[head]
            head += 1
            for index in Int(first[state])..<Int(first[state + 1]) {
                let next = Int(edgeTargets[index])
                depth[next] = depth[state] + 1
                let link = state == 0 ? 0 : self.next(Int(fail[state]), edgeBytes[index])
                fail[next] = Int32(link)
                longest[next] = terminal[next] >= 0 ? depth[next] : longest[link]
                form[next] = terminal[next] >= 0 ? terminal[next] : form[link]
                queue.append(next)
            }
        }
    }

    deinit {
        // The forms' bytes (a secret's) are overwritten before the memory goes back.
        explicit_bzero(edgeBytes, max(1, count - 1))
        explicit_bzero(rootNext, 256 * MemoryLayout<Int32>.size)
        for pointer in [UnsafeMutableRawPointer(depth), .init(longest), .init(form), .init(passesBreaks), .init(fail)] {
            pointer.deallocate()
        }
        for pointer in [UnsafeMutableRawPointer(rootNext), .init(first), .init(edgeBytes), .init(edgeTargets)] {
            pointer.deallocate()
        }
        starts.deallocate()
        windows.deallocate()
    }

    var isEmpty: Bool { count == 1 }

    /// The state after `byte` from `state`, following failure links as far as needed.
    @inline(__always)
    func next(_ state: Int, _ byte: UInt8) -> Int {
        var state = state
        while state != 0 {
            if let target = edge(state, byte) { return target }
            state = Int(fail[state])
        }
        return Int(max(0, rootNext[Int(byte)]))
    }

    /// The longest end of `state`'s string (itself or one its failure links lead to) inside a
    /// form that wraps, where a line break is passed over; 0 if none.
    @inline(__always)
    func wrapping(_ state: Int) -> Int {
        var state = state
        while state != 0 && !passesBreaks[state] { state = Int(fail[state]) }
        return state
    }

    /// The state `byte` leads to from `state` itself, if any.
    @inline(__always)
    func edge(_ state: Int, _ byte: UInt8) -> Int? {
        var low = Int(first[state])
        var high = Int(first[state + 1])
        while high - low > 8 {
            let middle = (low + high) >> 1
            if edgeBytes[middle] < byte { low = middle + 1 } else { high = middle }
        }
        while low < high {
            if edgeBytes[low] == byte { return Int(edgeTargets[low]) }
            low += 1
        }
        return nil
    }

    /// Whether some form may begin with the four bytes packed in `key` (little-endian).
    @inline(__always)
    func mayBegin(_ key: UInt32) -> Bool { starts.contains(key) }

    /// Whether some form may hold the four bytes packed in `key` at an offset below ``stride``.
    @inline(__always)
    func mayHold(_ key: UInt32) -> Bool { windows.contains(key) }

    /// Whether a byte of `key` is a CR or LF.
    @inline(__always)
    static func holdsBreak(_ key: UInt32) -> Bool {
        let (lineFeeds, returns) = (key ^ 0x0A0A_0A0A, key ^ 0x0D0D_0D0D)  // a byte 0 where one is
        return ((lineFeeds &- 0x0101_0101) & ~lineFeeds | (returns &- 0x0101_0101) & ~returns) & 0x8080_8080 != 0
    }

    /// The first four of `bytes` packed as a little-endian load packs them.
    static func key<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// A set of four-byte keys as bits of their hashes (about 128 bits a key, so that few keys not in
/// it pass by chance): one load and a bit test.
struct KeyFilter {
    private let bits: UnsafeMutablePointer<UInt64>
    private let shift: UInt32

    init(_ keys: Set<UInt32>) {
        var count = 1 << 16
        while count < keys.count * 128 && count < 1 << 24 { count <<= 1 }
        shift = UInt32(32 - count.trailingZeroBitCount)
        bits = .allocate(capacity: count / 64)
        bits.initialize(repeating: 0, count: count / 64)
        for key in keys {
            let slot = Int((key &* 0x9E37_79B1) >> shift)
            bits[slot >> 6] |= 1 << UInt64(slot & 63)
        }
    }

    func deallocate() { bits.deallocate() }

    @inline(__always)
    func contains(_ key: UInt32) -> Bool {
        let slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B1) &>> shift)
        return bits[slot &>> 6] & (1 &<< UInt64(truncatingIfNeeded: slot & 63)) != 0
    }
}
