import Glibc
import KeychainCore

// scan --git-history: every blob reachable from a repository's refs, streamed from
// `git rev-list --all --objects | git cat-file --batch` (each blob read in blocks, as a file is),
// each finding named by the commit that added the blob and the blob's path.

extension SecretScanner {
    /// Scans the history of the repository `directory` is in.
    /// - Throws: ``CommandFailure``: not in a repository (64), git missing (69), no pipe (74).
    func scanHistory(of directory: String) throws {
        let check = try runGit(["rev-parse", "--git-dir"], in: directory)
        guard check.succeeded else {
            throw CommandFailure.usage(
                "--git-history: \(quotedPath(directory)) is not in a git repository (git: \(check.reason)); "
                    + "name a directory of the repository whose history to scan")
        }
        guard let list = makePipe(), let output = makePipe() else {
            throw CommandFailure.io("cannot make a pipe for git (\(String(cString: strerror(errno))))")
        }
        let variables = Environment.all(except: Set(Settings.secretVariables + ["CREDENTIALS_DIRECTORY"]))
        let lister = spawnProcess(
            // Object names only: a path holding a line break would split rev-list's line (paths
            // come from the commit that adds the blob, read with -z).
            ["git", "-C", directory, "rev-list", "--all", "--objects", "--no-object-names"],
            descriptors: [nil, list.write, STDERR_FILENO], variables: variables)
        let reader = spawnProcess(
            ["git", "-C", directory, "cat-file", "--batch=%(objecttype) %(objectname) %(objectsize) %(rest)"],
            descriptors: [list.read, output.write, STDERR_FILENO], variables: variables)
        for fd in [list.read, list.write, output.write] { close(fd) }
        var running = [lister, reader].compactMap { $0 }
        defer {
            close(output.read)
            for pid in running { terminate(pid, graceSeconds: 1) }
        }
        guard running.count == 2 else {
            throw CommandFailure.unavailable("cannot start git for --git-history; install git (apt-get install git)")
        }
        var input = PipeReader(fd: output.read, buffer: buffer)
        while let header = input.line() {
            let fields = header.split(separator: UInt8(ascii: " "), maxSplits: 3, omittingEmptySubsequences: false)
            guard fields.count >= 3, let size = Int(String(decoding: fields[2], as: UTF8.self)) else {
                // "<object> missing" (or a header we cannot read): that object was not scanned.
                note(
                    "git could not read the object \(escapedForDisplay(String(decoding: fields.first ?? [], as: UTF8.self))) "
                        + "of \(quotedPath(directory)); the history was not all read", incomplete: true)
                continue
            }
            let type = String(decoding: fields[0], as: UTF8.self)
            guard type == "blob" else {
                input.skip(size + 1)
                continue
            }
            let object = String(decoding: fields[1], as: UTF8.self)
            var left = size
            let findings = try scanStream(path: object, commit: "") { input.take(&left) }
            input.skip(left + 1)
            if !findings.isEmpty {
                // Named by the oldest commit that adds it and the path it adds it at: a pair git has.
                let added = try firstAddition(of: object, in: directory)
                let commit = added?.commit ?? "unknown"
                let (path, named) = self.findings(inName: added?.path ?? object, commit: commit)
                try written(
                    named
                        + findings.map {
                            var finding = $0
                            finding.commit = commit
                            finding.path = path
                            return finding
                        })
            }
        }
        for pid in running {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            if status != 0 || input.error != nil {
                note(
                    "git could not list all of the history of \(quotedPath(directory)); it was not all read",
                    incomplete: true)
            }
        }
        running = []
    }

    /// The oldest commit that adds blob `object` (as a new or changed file, renames counted as
    /// additions), and the path it adds it at; nil when none does (a blob only a tag or a merge's
    /// resolution reaches). Read from `git log --raw -z`, so a path may hold any byte.
    private func firstAddition(of object: String, in directory: String) throws -> (commit: String, path: String)? {
        let run = try runGit(
            [
                "log", "--all", "--reverse", "--no-renames", "--no-abbrev", "--raw", "-z", "--format=%x00%H",
                "--find-object=\(object)",
            ], in: directory)
        var commit: String?
        var addsAtNextPath: Bool?
        for token in run.output.split(separator: 0, omittingEmptySubsequences: false) {
            if let adds = addsAtNextPath {
                if adds, let commit { return (commit, String(decoding: token, as: UTF8.self)) }
                addsAtNextPath = nil
                continue
            }
            let text = String(decoding: token.drop { $0 == UInt8(ascii: "\n") }, as: UTF8.self)
            if text.hasPrefix(":") {
                // :OLD_MODE NEW_MODE OLD_OBJECT NEW_OBJECT STATUS, then the path.
                let fields = text.split(separator: " ")
                addsAtNextPath = fields.count >= 5 && fields[3] == object && fields[4] != "D"
            } else if !text.isEmpty {
                commit = text
            }
        }
        return nil
    }
}

/// git cat-file's output read through a buffer: its header lines, and each object's bytes
/// handed on a block at a time.
struct PipeReader {
    let fd: Int32
    let buffer: UnsafeMutableRawBufferPointer
    private var start = 0
    private var end = 0
    private(set) var error: Int32?

    init(fd: Int32, buffer: UnsafeMutableRawBufferPointer) {
        self.fd = fd
        self.buffer = buffer
    }

    /// Reads more into the empty buffer; false at the end.
    private mutating func fill() -> Bool {
        guard error == nil else { return false }
        while true {
            let count = read(fd, buffer.baseAddress, buffer.count)
            if count >= 0 {
                (start, end) = (0, count)
                return count > 0
            }
            if errno != EINTR {
                error = errno
                return false
            }
        }
    }

    /// The next line, without its LF; nil at the end.
    mutating func line() -> [UInt8]? {
        var line: [UInt8] = []
        while true {
            if start == end && !fill() { return line.isEmpty ? nil : line }
            let rest = UnsafeRawBufferPointer(rebasing: buffer[start..<end])
            if let lineFeed = rest.firstIndex(of: 0x0A) {
                line += rest[..<lineFeed]
                start += lineFeed - rest.startIndex + 1
                return line
            }
            line += rest
            start = end
        }
    }

    /// The next bytes, at most `left`, counted off it; nil when none are left (or the end came).
    mutating func take(_ left: inout Int) -> UnsafeRawBufferPointer? {
        guard left > 0, start < end || fill() else { return nil }
        let count = min(left, end - start)
        defer {
            start += count
            left -= count
        }
        return UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
    }

    /// Passes over `count` bytes.
    mutating func skip(_ count: Int) {
        var left = count
        while take(&left) != nil {}
    }
}
