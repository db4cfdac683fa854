import FoundationEssentials
import Glibc
import KeychainCore

/// A CSV export read a row at a time, twice, so that import holds one row and one batch of
/// items however many rows the file has (and, per row, only the key it is stored under): once
/// to check every entry and decide its key before the first write, then again a batch at a
/// time as the batches are stored. Each entry read again must be the one checked (a digest of
/// its key and secret); a file changed in between stops the import before the batch that holds
/// the change, saying how many were stored.
struct StreamedItems {
    let kind: CSVExport.Kind
    /// The export's rows from its first line, each time asked.
    let rows: () throws -> CSVRows
    let source: String
    let service: ServiceName
    /// The key of each entry, in the file's order.
    let keys: [KeychainKey]
    /// The digest of each entry as it was checked.
    let digests: [Int]

    /// The items of a CSV export of `kind`, read once to check them: each entry's secret's size
    /// and the key it is stored under, numbered as ``ImportFile/keys(of:location:)`` numbers them.
    /// - Throws: ``FormatError`` as the reader finds the export, or for an entry that cannot be stored.
    static func checked(
        _ kind: CSVExport.Kind, rows: @escaping () throws -> CSVRows, source: String, service: ServiceName
    ) throws -> (StreamedItems, renamed: [(key: String, storedAs: String)]) {
        var names: [String] = []
        var digests: [Int] = []
        var reader = try rows()
        try CSVExport.forEachEntry(kind, &reader, source: source) { entry in
            let (key, text) = (entry.key, entry.text)
            if text.utf8.count > maximumSecretSize {
                throw FormatError(
                    "\(source): entry \(names.count + 1), \(quotedValue(key, expected: "an entry name")): "
                        + KeychainError.secretTooLarge(limit: maximumSecretSize).description)
            }
            names.append(key)
            digests.append(digest(key, text))
        }
        let (keys, renamed) = try ImportFile.keys(of: names) {
            "\(source): entry \($0 + 1), \(quotedValue(names[$0], expected: "an entry name"))"
        }
        let items = StreamedItems(
            kind: kind, rows: rows, source: source, service: service, keys: keys, digests: digests)
        return (items, renamed)
    }

    var count: Int { keys.count }

    /// Reads the export again, giving `body` its items `size` at a time, each entry checked to be
    /// the one read the first time.
    /// - Throws: ``CommandFailure`` (65) when the export changed since, naming how many items were
    ///   stored; what `body` throws.
    func forEachBatch(of size: Int, _ body: ([SecretToStore]) throws -> Void) throws {
        var batch: [SecretToStore] = []
        batch.reserveCapacity(min(size, count))
        var (index, stored) = (0, 0)
        func changed() -> CommandFailure {
            CommandFailure.badData(
                "\(source) changed while it was imported (from entry \(stored + 1) on); \(stored) of its "
                    + "\(count) entries were stored. Import it again once nothing writes it (--overwrite "
                    + "replaces what was stored)")
        }
        do {
            var reader = try rows()
            try CSVExport.forEachEntry(kind, &reader, source: source) { entry in
                let text = entry.text
                guard index < count, Self.digest(entry.key, text) == digests[index] else { throw changed() }
                batch.append(SecretToStore(service: service, key: keys[index], secret: Data(text.utf8)))
                index += 1
                if batch.count == size {
                    try body(batch)
                    stored += batch.count
                    batch.removeAll(keepingCapacity: true)
                }
            }
        } catch is FormatError {
            throw changed()
        }
        guard index == count else { throw changed() }
        if !batch.isEmpty { try body(batch) }
    }

    /// A digest of an entry's key and text by their bytes (with this process's random seed).
    private static func digest(_ key: String, _ text: String) -> Int {
        var hasher = Hasher()
        for var text in [key, text] {
            text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(text.utf8.count)
        }
        return hasher.finalize()
    }
}

/// The file (or standard input) `import` reads: its first bytes looked at to tell what it is,
/// then read whole, or, a CSV export in a file that can be read again, a piece at a time.
final class ExportStream {
    let descriptor: Int32
    /// The file as messages name it: a quoted path, or `standard input`.
    let source: String
    /// The bytes read so far, from the start.
    private(set) var head: [UInt8] = []
    private var ended = false
    private let closes: Bool
    /// Whether the file can be read again from its start (a regular file, standard input too).
    let isRegular: Bool
    private let size: Int
    /// Where the file's reading starts: 0, or where standard input was left.
    private let start: Int

    /// Opens `path` (standard input when nil).
    /// - Throws: ``CommandFailure`` (I/O) when it cannot be opened.
    init(path: String?) throws {
        if let path {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CommandFailure.io(
                    "cannot open \(quotedPath(path)) (\(String(cString: strerror(errno)))). Check the path and its permissions"
                )
            }
        } else {
            descriptor = STDIN_FILENO
        }
        (source, closes) = (path.map(quotedPath) ?? "standard input", path != nil)
        var info = stat()
        isRegular = fstat(descriptor, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        // Standard input is read from where it is (`(read header; keychain-cli import) < FILE`).
        start = isRegular ? max(0, Int(lseek(descriptor, 0, SEEK_CUR))) : 0
        size = isRegular ? max(0, Int(info.st_size) - start) : 0
    }

    deinit { if closes { close(descriptor) } }

    /// Reads until the first byte that says what the file is (see ``ExportText/firstByte(of:)``)
    /// and the four a zip starts with, or the file's end; that byte, nil when there is none.
    /// - Throws: ``FormatError`` when the first MiB holds no such byte (a file of zeros).
    func kindByte() throws -> UInt8? {
        while !ended, head.count < 4 || ExportText.firstByte(of: head) == nil {
            guard head.count < 1 << 20 else {
                throw FormatError(
                    "\(source) holds only white space or zero bytes in its first MiB, so it is no export; nothing "
                        + "was stored. Give the file the export wrote")
            }
            guard let piece = try piece(at: head.count) else {
                ended = true
                break
            }
            head += piece
        }
        return ExportText.firstByte(of: head)
    }

    /// The whole file: nil when it is larger than `limit`.
    func bytes(limit: Int) throws -> [UInt8]? {
        guard size <= limit else { return nil }
        while !ended, let piece = try piece(at: head.count) {
            head += piece
            if head.count > limit { return nil }
        }
        ended = true
        return head
    }

    /// The file's pieces from its start, for a reader of its own.
    /// - Throws: ``CommandFailure`` (65) when it is larger than `limit` (it grew since it was opened).
    func pieces(limit: Int) throws -> () throws -> [UInt8]? {
        guard size <= limit else { throw tooLarge(limit) }
        var offset = 0
        return { [self] in
            let piece = try piece(at: offset)
            offset += piece?.count ?? 0
            guard offset <= limit else { throw tooLarge(limit) }
            return piece
        }
    }

    /// That the file is larger than `limit`, and what to do.
    func tooLarge(_ limit: Int) -> CommandFailure {
        CommandFailure.badData(
            "\(source) is larger than \(limit >> 20) MiB; nothing was stored. Split it into several files and import each"
        )
    }

    /// The next piece of the file at `offset`, nil at its end: read where it is when the file
    /// can be read again, else the next read (`offset` then being where the last read ended).
    private func piece(at offset: Int) throws -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                isRegular
                    ? pread(descriptor, buffer.baseAddress, buffer.count, off_t(start + offset))
                    : read(descriptor, buffer.baseAddress, buffer.count)
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw CommandFailure.io(
                    "could not read \(source) (\(String(cString: strerror(errno)))). Check the path and its permissions"
                )
            }
            if count == 0 { return nil }
            chunk.removeSubrange(count...)
            return chunk
        }
    }
}
