/// Every form to hide, as one Aho-Corasick automaton: one step a byte (amortized over the
/// failure links) however many forms there are and however long or repetitive they are, so the
/// cost of masking grows with the output alone, never with output × form length.
///
/// State 0 is the root (no byte of any form open). A state stands for the longest end of the
/// output read so far that begins some form; ``longest(_:)`` is the longest form that ends
/// there. Forms given as `acrossLines` (base64, which encoders wrap) may have a line break (LF or
/// CRLF) between any two of their bytes: a state inside one passes a break over.
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
    /// Whether a line break is passed over in this state (one inside a form that wraps).
    let passesBreaks: UnsafeMutablePointer<Bool>
    private let fail: UnsafeMutablePointer<Int32>
    /// The root's 256 transitions (-1: none); every state's edges, sorted, from `first[state]`.
    private let rootNext: UnsafeMutablePointer<Int32>
    private let first: UnsafeMutablePointer<Int32>
    private let edgeBytes: UnsafeMutablePointer<UInt8>
    private let edgeTargets: UnsafeMutablePointer<Int32>
    /// A bit for each hash of a form's first four bytes (and, for one that wraps, of those bytes
    /// with a line break among them): where the four bytes at a position miss it, no form begins.
    let filter: UnsafeMutablePointer<UInt64>
    let filterShift: UInt32

    init(plain: [[UInt8]], acrossLines: [[UInt8]]) {
        // Sorted, a form's next state is either its parent's last child so far or new: the trie
        // is built without lookups, each state's children as a list (first child, next sibling).
        let forms = (plain.map { ($0, false) } + acrossLines.map { ($0, true) }).sorted {
            $0.0.lexicographicallyPrecedes($1.0)
        }
        var byte: [UInt8] = [0]
        var firstChild: [Int32] = [-1]
        var lastChild: [Int32] = [-1]
        var sibling: [Int32] = [-1]
        var terminal: [Bool] = [false]
        var passes: [Bool] = [false]
        var keys: Set<UInt32> = []
        for (form, wraps) in forms {
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
                terminal.append(false)
                passes.append(false)
                if last >= 0 { sibling[last] = Int32(new) } else { firstChild[state] = Int32(new) }
                lastChild[state] = Int32(new)
                state = new
            }
            terminal[state] = true
            keys.insert(Self.key(form))
            guard wraps else { continue }
            for split in 1...3 {
                for lineEnd in [[UInt8(ascii: "\n")], [UInt8(ascii: "\r"), UInt8(ascii: "\n")]] {
                    keys.insert(Self.key(form[0..<split] + lineEnd + form[split..<4]))
                }
            }
        }
        let count = byte.count
        self.count = count
        longestForm = forms.map(\.0.count).max() ?? 0
        depth = .allocate(capacity: count)
        longest = .allocate(capacity: count)
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
        // About 64 bits a key, so that few positions pass by chance.
        var bits = 1 << 16
        while bits < keys.count * 64 && bits < 1 << 24 { bits <<= 1 }
        filterShift = UInt32(32 - bits.trailingZeroBitCount)
        filter = .allocate(capacity: bits / 64)
        filter.initialize(repeating: 0, count: bits / 64)
        for key in keys {
            let slot = Int((key &* 0x9E37_79B1) >> filterShift)
            filter[slot >> 6] |= 1 << UInt64(slot & 63)
        }
        // Depths, failure links and longest ends, breadth first (a state's link is shallower).
        depth[0] = 0
        fail[0] = 0
        longest[0] = 0
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
                longest[next] = terminal[next] ? depth[next] : longest[link]
                queue.append(next)
            }
        }
    }

    deinit {
        for pointer in [UnsafeMutableRawPointer(depth), .init(longest), .init(passesBreaks), .init(fail)] {
            pointer.deallocate()
        }
        for pointer in [UnsafeMutableRawPointer(rootNext), .init(first), .init(edgeBytes), .init(edgeTargets)] {
            pointer.deallocate()
        }
        filter.deallocate()
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
    func mayBegin(_ key: UInt32) -> Bool {
        let slot = Int((key &* 0x9E37_79B1) >> filterShift)
        return filter[slot >> 6] & (1 << UInt64(slot & 63)) != 0
    }

    /// The first four of `bytes` packed as a little-endian load packs them.
    static func key<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }
}
