import Dispatch
import FoundationEssentials
import Glibc
import KeychainCore

/// A pass (password-store) directory, or gopass's in the same layout: every `PATH.gpg` file is
/// the entry PATH, decrypted by gpg as `pass show` decrypts it (the user's gpg-agent and keys;
/// a key with a passphrase asks through pinentry).
struct PassStore {
    /// The store's directory, as given.
    let root: String
    /// How long one decryption may take, a passphrase prompt included.
    let timeout: Double

    struct Entry {
        /// The entry's name, its path in the store without `.gpg`: the key it is stored under.
        var name: String
        var path: String
    }

    /// The store's directory: `directory`, else `$PASSWORD_STORE_DIR`, else `~/.password-store`.
    static func directory(_ given: String?) -> String {
        given ?? Environment.value("PASSWORD_STORE_DIR") ?? "\(Environment.value("HOME") ?? "")/.password-store"
    }

    /// Every entry, sorted by name. Hidden files and folders (`.git`, `.gpg-id`, `.extensions`)
    /// are not entries, as pass lists them. A symbolic link is followed when it leads to a place
    /// inside the store (an entry under two names), and refused when it leads out of it.
    /// - Throws: ``CommandFailure``: 74 when the store cannot be read, 65 for a link out of it.
    func entries() throws -> [Entry] {
        guard let top = realPath(root) else {
            throw CommandFailure(
                kind: .io,
                message: "cannot read the pass store \(quotedPath(root)) (\(String(cString: strerror(errno)))). "
                    + "Give its directory (import --format pass DIR) or set PASSWORD_STORE_DIR")
        }
        var entries: [Entry] = []
        try walk(top, name: "", top: top, within: [top], into: &entries)
        return entries.sorted { $0.name < $1.name }
    }

    /// Adds the entries under `directory` (named `name` in the store); `within`: the real paths
    /// of the folders it is in, to stop at a link back to one of them (a loop).
    private func walk(_ directory: String, name: String, top: String, within: [String], into entries: inout [Entry])
        throws
    {
        guard let stream = opendir(directory) else {
            throw CommandFailure(
                kind: .io,
                message:
                    "cannot read \(quotedPath(directory)) (\(String(cString: strerror(errno)))); nothing was stored")
        }
        defer { closedir(stream) }
        var children: [String] = []
        while let record = readdir(stream) {
            let bytes = withUnsafeBytes(of: record.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            guard bytes.first != UInt8(ascii: ".") else { continue }
            // A key is UTF-8 text: a name that is not (an old Latin-1 file name) cannot be one.
            guard let child = String(validating: bytes, as: UTF8.self) else {
                let shown = escapedForDisplay(String(decoding: bytes, as: UTF8.self))
                throw CommandFailure.badData(
                    "the pass store has a name that is not UTF-8 text, in \(quotedPath(directory)) ('\(shown)'); nothing "
                        + "was stored. Rename it in UTF-8 (pass mv), then import again")
            }
            children.append(child)
        }
        for child in children.sorted() {
            let path = "\(directory)/\(child)"
            let childName = name.isEmpty ? child : "\(name)/\(child)"
            let shown = quotedValue(
                child.hasSuffix(".gpg") ? String(childName.dropLast(4)) : childName, expected: "an entry name")
            var info = stat()
            guard lstat(path, &info) == 0 else {
                throw CommandFailure(
                    kind: .io,
                    message:
                        "cannot read the pass entry \(shown) (\(String(cString: strerror(errno)))); nothing was stored")
            }
            var target = path
            if info.st_mode & S_IFMT == S_IFLNK {
                guard let real = realPath(path), stat(real, &info) == 0 else {
                    guard child.hasSuffix(".gpg") else { continue }  // no entry, to pass either
                    throw CommandFailure.badData(
                        "the pass entry \(shown) is a symbolic link to nothing (pass show cannot read it either); "
                            + "nothing was stored. Remove the link or restore what it points to")
                }
                guard real == top || real.hasPrefix(top + "/") else {
                    throw CommandFailure.badData(
                        "the pass entry \(shown) is a symbolic link out of the store, to "
                            + "\(quotedPath(real)); nothing was stored. Move what it links to into the store, or remove the link"
                    )
                }
                target = real
            }
            if info.st_mode & S_IFMT == S_IFDIR {
                // `target` is a real path: the store's is, and so is every link's.
                guard !within.contains(target) else { continue }  // a link to a folder it is in
                try walk(target, name: childName, top: top, within: within + [target], into: &entries)
            } else if info.st_mode & S_IFMT == S_IFREG, child.hasSuffix(".gpg"), child.count > 4 {
                entries.append(Entry(name: String(childName.dropLast(4)), path: target))
            }
        }
    }

    /// The decrypted contents of each of `entries`, in order: the first alone (so that a key's
    /// passphrase is asked once, and gpg-agent keeps it for the others), then the others four at
    /// a time.
    /// - Throws: ``CommandFailure``: 77 when gpg cannot decrypt an entry (naming it and what gpg
    ///   said), 75 when it takes longer than `timeout`, 69 without gpg.
    func decrypt(_ entries: [Entry], progress: @escaping @Sendable (Int) -> Void) throws -> [Data] {
        guard let first = entries.first else { return [] }
        let results = Locked([Result<Data, CommandFailure>?](repeating: nil, count: entries.count))
        results.withLock { $0[0] = Result { () throws(CommandFailure) in try decrypt(first) } }
        if case .failure(let failure) = results.withLock({ $0[0] }) { throw failure }
        progress(1)
        let next = Locked(1)
        let workers = min(4, entries.count - 1)
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while true {
                let index = next.withLock { index -> Int? in
                    defer { index += 1 }
                    return index < entries.count && !results.withLock({ $0.contains { $0?.isFailure == true } })
                        ? index : nil
                }
                guard let index else { return }
                let result = Result { () throws(CommandFailure) in try decrypt(entries[index]) }
                let done = results.withLock { results in
                    results[index] = result
                    return results.count { $0 != nil }
                }
                progress(done)
            }
        }
        let all = results.withLock { $0 }
        if let failure = all.lazy.compactMap({ $0 }).first(where: \.isFailure) { _ = try failure.get() }
        return try all.map { try $0!.get() }
    }

    private func decrypt(_ entry: Entry) throws(CommandFailure) -> Data {
        let gpg = executable(named: "gpg2") != nil ? "gpg2" : "gpg"
        let options = (Environment.value("PASSWORD_STORE_GPG_OPTS") ?? "").split(whereSeparator: \.isWhitespace).map(
            String.init)
        let arguments =
            [gpg, "-d"] + options + [
                "--quiet", "--yes", "--compress-algo=none", "--no-encrypt-to", "--batch", "--use-agent", "--",
                entry.path,
            ]
        let shown = quotedValue(entry.name, expected: "an entry name")
        let run: ToolRun?
        do {
            run = try ToolRun.run(
                arguments, timeout: timeout, installHint: "pass stores are read with gpg (apt-get install gnupg)")
        } catch {
            throw error as? CommandFailure ?? CommandFailure(kind: .unavailable, message: "\(error)")
        }
        guard let run else {
            throw CommandFailure(
                kind: .timedOut,
                message:
                    "gpg did not decrypt the pass entry \(shown) within \(timeout) seconds (a passphrase not given?); nothing "
                    + "was stored. Give it more time with --timeout, or unlock the key first (pass show \(shown))")
        }
        guard run.succeeded else {
            throw CommandFailure(
                kind: .denied,
                message: "gpg cannot decrypt the pass entry \(shown): \(run.reason); nothing was stored. "
                    + "Check that its key (the .gpg-id of its folder) is in your keyring (gpg -K)")
        }
        return Data(run.output)
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

/// `path` with every symbolic link resolved, or nil when it cannot be (errno says why).
private func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
