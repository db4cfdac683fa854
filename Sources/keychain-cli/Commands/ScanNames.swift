import KeychainCore

// How scan names what it reads: a path that holds a secret (a build artifact named after a
// token) is itself a finding, and is shown with that part as *** wherever scan names it; a
// name that is not UTF-8 is shown byte by byte.

extension SecretScanner {
    /// `path` for a note: quoted, any form of a secret in it as ***.
    func shown(_ path: String) -> String { quotedPath(masked(path).shown) }

    /// `path` with the forms of secrets in it as ***, and what was found there.
    /// (The finder is left mid-stream: every reader of it, this one and `scanStream`, restarts it first.)
    private func masked(_ path: String) -> (shown: String, matches: [SecretFinder.Match]) {
        finder.restart()
        var bytes = Array(path.utf8)
        defer { wipe(&bytes) }
        let matches = bytes.withUnsafeBytes { finder.find(in: $0) }
        guard !matches.isEmpty else { return (path, []) }
        var shown: [UInt8] = []
        var cursor = 0
        for match in matches.sorted(by: { $0.start < $1.start }) where match.end > cursor {
            shown += bytes[cursor..<max(cursor, match.start)] + MaskingStream.mask
            cursor = match.end
        }
        shown += bytes[cursor...]
        return (String(decoding: shown, as: UTF8.self), matches)
    }

    /// `path` as findings name it (masked), and a finding for each secret in the name itself
    /// (line 0, form "file name").
    func findings(inName path: String, commit: String?) -> (path: String, findings: [ScanFinding]) {
        let (shownPath, matches) = masked(path)
        var findings: [ScanFinding] = []
        var seen: Set<Int> = []
        for match in matches {
            for owner in match.owners where seen.insert(owner.secret).inserted {
                let (service, key) = names[owner.secret]
                findings.append(
                    ScanFinding(
                        commit: commit, path: shownPath, line: 0, offset: 0, service: service, key: key,
                        form: "file name"))
            }
        }
        return (shownPath, findings)
    }
}

/// A name that is not UTF-8, for a note: each run of UTF-8 text as list escapes it, each
/// other byte `\xNN`.
func displayedName(_ bytes: some Collection<UInt8>) -> String {
    let bytes = Array(bytes)
    var shown = ""
    var index = 0
    while index < bytes.count {
        if let (_, length) = utf8Scalar(in: bytes, at: index) {
            shown += escapedForDisplay(String(decoding: bytes[index..<(index + length)], as: UTF8.self))
            index += length
        } else {
            let digits = Array("0123456789ABCDEF")
            shown += "\\x\(digits[Int(bytes[index] >> 4)])\(digits[Int(bytes[index] & 15)])"
            index += 1
        }
    }
    return shown
}
