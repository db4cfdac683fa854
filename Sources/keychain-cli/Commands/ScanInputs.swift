import Glibc
import KeychainCore

/// What scan reads: files in blocks of 1 MiB (never one whole: memory does not grow with a
/// file), directories walked in name order without following links, the files git lists
/// (`--git`), standard input; and what it tells on the way (notes on stderr).
final class SecretScanner {
    var finder: SecretFinder
    /// Each secret's service and key, by its index in the finder's secrets.
    let names: [(service: String, key: String)]
    private let json: Bool
    /// The read buffer (it may hold a secret found: overwritten at the end).
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
    /// How many findings were written.
    private(set) var found = 0
    /// Whether some input could not be read (or was skipped as a device or FIFO).
    private(set) var incomplete = false

    init(finder: SecretFinder, names: [(service: String, key: String)], json: Bool) {
        self.finder = finder
        self.names = names
        self.json = json
    }

    deinit {
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
        buffer.deallocate()
    }

    /// A note on stderr; `incomplete` when the scan did not read everything it was asked to.
    func note(_ message: String, incomplete: Bool = false) {
        warn("scan: " + message)
        if incomplete { self.incomplete = true }
    }

    /// A path named on the command line: a file or FIFO read, a directory walked (through a link).
    func scan(path: String, gitListed: Bool) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            note("cannot read \(shown(path)) (\(String(cString: strerror(errno)))); skipped", incomplete: true)
            return
        }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: try gitListed ? scanListed(directory: path) : walk(directory: path)
        case S_IFREG, S_IFIFO: try scanFile(path, named: true)
        default:
            note("\(shown(path)) is not a file or a directory (a device or socket); skipped", incomplete: true)
        }
    }

    /// Every file under `directory`, in name order; links are not followed (what they point to
    /// inside the tree is read where it is), FIFOs, devices and sockets are skipped with a note.
    private func walk(directory: String) throws {
        var stack = [directory]
        while let current = stack.popLast() {
            guard let handle = opendir(current) else {
                note(
                    "cannot read \(shown(current)) (\(String(cString: strerror(errno)))); skipped",
                    incomplete: true)
                continue
            }
            var entries: [String] = []
            while let entry = readdir(handle) {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    note(
                        "\(shown(current)) holds a name that is not UTF-8 (\(displayedName(bytes))); not read",
                        incomplete: true)
                    continue
                }
                if name != "." && name != ".." { entries.append(name) }
            }
            closedir(handle)
            var directories: [String] = []
            for name in entries.sorted() {
                let path = current.hasSuffix("/") ? current + name : current + "/" + name
                var status = stat()
                guard lstat(path, &status) == 0 else {
                    // Gone since it was listed: nothing to read. Otherwise (a path longer than
                    // the system takes, 4096 bytes), not read, and said so.
                    if errno != ENOENT {
                        note(
                            "cannot read \(shown(path)) (\(String(cString: strerror(errno)))); skipped",
                            incomplete: true)
                    }
                    continue
                }
                switch status.st_mode & S_IFMT {
                case S_IFDIR: directories.append(path)
                case S_IFREG: try scanFile(path)
                case S_IFLNK: continue
                default: note("\(shown(path)) is a FIFO, device or socket; skipped")
                }
            }
            stack += directories.reversed()
        }
    }

    /// The files git lists under `directory` (tracked, and untracked but not ignored: .gitignore honoured).
    private func scanListed(directory: String) throws {
        let run = try runGit(["ls-files", "-co", "--exclude-standard", "-z"], in: directory)
        guard run.succeeded else {
            throw CommandFailure.usage(
                "--git: \(quotedPath(directory)) is not in a git work tree (git: \(run.reason)); leave out --git "
                    + "to scan every file under it")
        }
        var names: [String] = []
        for bytes in run.output.split(separator: 0) {
            guard let name = String(validating: bytes, as: UTF8.self) else {
                note(
                    "git lists a name in \(shown(directory)) that is not UTF-8 (\(displayedName(bytes))); not read",
                    incomplete: true)
                continue
            }
            names.append(name)
        }
        for name in names.sorted() {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var status = stat()
            // Deleted but still in the index, a link, a submodule: nothing of the tree's to read.
            guard lstat(path, &status) == 0 else {
                if errno != ENOENT {
                    note("cannot read \(shown(path)) (\(String(cString: strerror(errno)))); skipped", incomplete: true)
                }
                continue
            }
            guard status.st_mode & S_IFMT == S_IFREG else { continue }
            try scanFile(path)
        }
    }

    /// One file: one found in a tree is opened without following a link or waiting on a FIFO's
    /// writer, and read only if it is still a regular file; one `named` on the command line may
    /// be a FIFO (`scan <(command)`).
    private func scanFile(_ path: String, named: Bool = false) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (named ? 0 : O_NOFOLLOW | O_NONBLOCK))
        guard fd >= 0 else {
            note("cannot read \(shown(path)) (\(String(cString: strerror(errno)))); skipped", incomplete: true)
            return
        }
        defer { close(fd) }
        var status = stat()
        guard named || (fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFREG) else { return }
        try scanStream(fd, path: path)
    }

    /// Standard input, as `-`.
    func scanStandardInput() throws { try scanStream(STDIN_FILENO, path: "-") }

    /// Reads `fd` to its end through the finder, writing its findings as they are sure.
    func scanStream(_ fd: Int32, path: String) throws {
        var input = BlockInput(fd: fd, buffer: buffer)
        _ = try scanStream(path: path, commit: nil) { input.next() }
        if let error = input.error {
            note(
                "cannot read all of \(shown(path)) (\(String(cString: strerror(error)))); the rest was skipped",
                incomplete: true)
        }
    }

    /// Runs the finder over the blocks `read` gives (nil: the end) and reports what it finds:
    /// written as it is sure when `commit` is nil, else returned (a blob of `--git-history`,
    /// whose commit is looked up once something is found in it).
    func scanStream(
        path: String, commit: String?, read: () -> UnsafeRawBufferPointer?
    ) throws -> [ScanFinding] {
        let (path, named) = findings(inName: path, commit: commit)
        finder.restart()
        var lines = LineTracker(keep: finder.longestSpan + 16)
        defer { lines.clear() }
        var pending = PendingFindings()
        var kept: [ScanFinding] = []
        func report(_ findings: [ScanFinding]) throws {
            if commit == nil {
                try writeFindings(findings, json: json)
                found += findings.count
            } else {
                kept += findings
            }
        }
        try report(named)
        while let block = read() {
            for match in finder.find(in: block) {
                let line = lines.line(at: match.start, in: block)
                for owner in match.owners {
                    let (service, key) = names[owner.secret]
                    pending.add(
                        ScanFinding(
                            commit: commit, path: path, line: line, offset: match.start, service: service, key: key,
                            form: owner.label),
                        secret: owner.secret, length: match.end - match.start)
                }
            }
            lines.finish(block)
            try report(pending.take(before: finder.offset - finder.longestSpan - 16))
        }
        try report(pending.take(before: nil))
        return kept
    }

    /// Counts findings written by a caller that collected them (`--git-history`).
    func written(_ findings: [ScanFinding]) throws {
        try writeFindings(findings, json: json)
        found += findings.count
    }
}

/// A descriptor read in blocks into a buffer: read(2) again on EINTR; an error ends the input
/// (kept in `error`).
struct BlockInput {
    let fd: Int32
    let buffer: UnsafeMutableRawBufferPointer
    var error: Int32?

    init(fd: Int32, buffer: UnsafeMutableRawBufferPointer) {
        self.fd = fd
        self.buffer = buffer
    }

    mutating func next() -> UnsafeRawBufferPointer? {
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count > 0 { return UnsafeRawBufferPointer(rebasing: buffer[..<count]) }
            if count == 0 { return nil }
            if errno == EINTR { continue }
            error = errno
            return nil
        }
    }
}
