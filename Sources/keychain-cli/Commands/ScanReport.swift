import FoundationEssentials
import Glibc
import KeychainCore

// What scan reports of a secret found: where (path or commit and path, line, byte offset), whose
// (SERVICE/KEY) and in which form; never the value or any part of it.

/// One finding, as `scan --json` prints it (one object per line, keys sorted).
struct ScanFinding: Encodable {
    /// The commit that added the blob (`--git-history` only).
    var commit: String?
    var path: String
    /// The line the form begins on, from 1.
    var line: Int
    /// The byte offset where it begins, from 0.
    var offset: Int
    var service: String
    var key: String
    /// `plain`, `base64`, `url`, `json`, `line 2`, `base64 of line 2`, … (``MaskedForms/labelled(_:)``).
    var form: String

    /// `PATH:LINE: SERVICE/KEY (FORM)`, or `COMMIT:PATH:LINE: …` as git grep names a revision's
    /// file; names escaped as list prints them.
    var text: String {
        let place = (commit.map { "\($0):" } ?? "") + escapedForDisplay(path)
        return "\(place):\(line): \(escapedForDisplay(service))/\(escapedForDisplay(key)) (\(form))\n"
    }
}

/// The line numbers of a stream read in blocks: the line breaks before the block being read, and
/// the last bytes before it (enough for a form that began there), so that memory stays fixed.
struct LineTracker {
    /// The offset of the block being read.
    private var start = 0
    private var linesBefore = 0
    /// The last `keep` bytes before `start`.
    private var tail: [UInt8] = []
    private let keep: Int
    /// Line breaks counted so far in the block: those before `cursor`.
    private var cursor = 0
    private var cursorLines = 0

    init(keep: Int) { self.keep = keep }

    /// The line (from 1) of the stream's byte at `offset`: in `block`, or in the kept bytes before it.
    mutating func line(at offset: Int, in block: UnsafeRawBufferPointer) -> Int {
        if offset >= start {
            let local = min(offset - start, block.count)
            if local < cursor { (cursor, cursorLines) = (0, 0) }
            cursorLines += lineFeeds(UnsafeRawBufferPointer(rebasing: block[cursor..<local]))
            cursor = local
            return linesBefore + cursorLines + 1
        }
        let back = min(start - offset, tail.count)
        return tail.withUnsafeBytes {
            linesBefore - lineFeeds(UnsafeRawBufferPointer(rebasing: $0[($0.count - back)...])) + 1
        }
    }

    /// `block` has been read: the next begins after it.
    mutating func finish(_ block: UnsafeRawBufferPointer) {
        linesBefore += lineFeeds(block)
        start += block.count
        (cursor, cursorLines) = (0, 0)
        if block.count >= keep {
            wipe(&tail)
            tail = Array(block[(block.count - keep)...])
        } else {
            tail.append(contentsOf: block)
            if tail.count > keep { tail.removeFirst(tail.count - keep) }
        }
    }

    /// Overwrites the kept bytes (they may hold a secret found).
    mutating func clear() { wipe(&tail) }
}

/// The LF bytes in `bytes`, eight at a time.
func lineFeeds(_ bytes: UnsafeRawBufferPointer) -> Int {
    guard let base = bytes.baseAddress else { return 0 }
    let count = bytes.count
    var found = 0
    var index = 0
    let ones: UInt64 = 0x0101_0101_0101_0101
    while index + 8 <= count {
        let word = (base + index).loadUnaligned(as: UInt64.self) ^ (ones &* 0x0A)
        // A byte of `word` is 0 where the byte was LF: its high bit set in `zero`, no other.
        let zero = ~(((word & (ones &* 0x7F)) &+ (ones &* 0x7F)) | word) & (ones &* 0x80)
        found += zero.nonzeroBitCount
        index += 8
    }
    while index < count {
        if base.load(fromByteOffset: index, as: UInt8.self) == 0x0A { found += 1 }
        index += 1
    }
    return found
}

/// The findings of one input not yet written: a secret found more than once on a line is
/// reported once there, in its longest form (a secret of several lines is found whole, not as
/// its first line too).
struct PendingFindings {
    private var entries: [(finding: ScanFinding, secret: Int, length: Int)] = []
    /// The line of each secret's last finding taken (a later one on that line is not reported).
    private var taken: [Int: Int] = [:]

    mutating func add(_ finding: ScanFinding, secret: Int, length: Int) {
        if let index = entries.firstIndex(where: { $0.secret == secret && $0.finding.line == finding.line }) {
            if length > entries[index].length { entries[index] = (finding, secret, length) }
            return
        }
        entries.append((finding, secret, length))
    }

    /// Takes the findings that begin before `offset` (nil: all), in the order they begin.
    mutating func take(before offset: Int?) -> [ScanFinding] {
        var ready = entries.filter { offset == nil || $0.finding.offset < offset! }
        entries.removeAll { offset == nil || $0.finding.offset < offset! }
        ready.sort { ($0.finding.offset, $0.secret) < ($1.finding.offset, $1.secret) }
        return ready.filter { taken.updateValue($0.finding.line, forKey: $0.secret) != $0.finding.line }.map(\.finding)
    }
}

/// Writes findings as text or JSON lines.
func writeFindings(_ findings: [ScanFinding], json: Bool) throws {
    guard !findings.isEmpty else { return }
    var bytes: [UInt8] = []
    for finding in findings {
        if json {
            bytes += try JSONEncoder.sortedKeys().encode(finding) + [UInt8(ascii: "\n")]
        } else {
            bytes += Array(finding.text.utf8)
        }
    }
    try writeOutput(bytes)
}
