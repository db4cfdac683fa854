import ArgumentParser
import FoundationEssentials
import Glibc
import KeychainCore

extension KeychainCLI {
    struct Edit: KeychainCommand {
        static let configuration = CommandConfiguration(
            abstract: "Edit a secret in $VISUAL or $EDITOR (else vi), on a file kept in memory only.",
            discussion: """
                The secret goes to a file (0600) in a new private directory in $XDG_RUNTIME_DIR, \
                which must be a tmpfs (never a disk), removed when edit ends, even by SIGKILL. \
                When the editor exits 0 with the text changed, it is stored; an unchanged text \
                stores nothing. An entry imported from a password manager is edited as its \
                lines: the password first, then one field per line, the notes after an empty \
                line. If the secret had no final newline, the one the editor adds is dropped. \
                EDITOR may hold arguments: it is run as sh -c '$EDITOR "$@"', as git runs it.

                  keychain-cli -s web edit Work/github
                  EDITOR='code --wait' keychain-cli edit deploy-config
                  EDITOR='sed -i s/old/new/' keychain-cli edit app-config    # in a script

                If another program changed the secret while the editor was open, nothing is \
                stored and their change is kept: your edit stays in a file in $XDG_RUNTIME_DIR \
                (0600), and the message says how to store it over theirs or remove it.

                Exit codes: 0 stored, or unchanged; 1 no such secret (set KEY creates it), or the \
                editor failed (nothing stored); 65 a binary secret (before the editor opens), an \
                empty result or one over 1 MiB; 74 no tmpfs $XDG_RUNTIME_DIR of yours; 75 \
                changed by another writer meanwhile; 126, 127 the editor cannot be run or found.
                """)

        @OptionGroup(title: "Global options") var globals: GlobalOptions
        @ParentCommand var root: KeychainCLI

        @Argument(help: "The key of the secret to edit.", completion: .keyNames)
        var key: String

        func run() throws {
            let key = try KeychainKey(key)
            // Before any passphrase is asked: where the file would go.
            let base = try EditedFile.base()
            let keychain = try keychain()
            let service = keychain.service.rawValue
            guard var original = try keychain.data(for: key) else {
                throw CommandFailure.notFound(
                    "\(KeychainError.notFound(service: service, key: key.rawValue)). edit changes a secret that is "
                        + "there; create it with: keychain-cli -s \(shellQuoted(service)) set -- "
                        + shellQuoted(key.rawValue))
            }
            defer { wipe(&original) }
            guard !original.contains(0), String(validating: original, as: UTF8.self) != nil else {
                throw CommandFailure.badData(
                    "the secret '\(key)' is binary (not UTF-8 text, or holding NUL), so it cannot be edited as text; "
                        + "nothing was changed. Write a new one with: keychain-cli set KEY --raw < FILE")
            }
            let file = try EditedFile(holding: Array(original), in: base)
            defer { file.remove() }
            let editor = Editor()
            // Our environment but keychain-cli's own secrets, as exec withholds them from a command.
            let status = try editor.run(
                on: file.path, variables: Environment.all(except: Set(Settings.secretVariables)))
            if let failure = editor.failure(status) {
                if [SIGINT, SIGQUIT].contains(status & 0x7f) {
                    // As git does: the interrupt was meant for both.
                    file.remove()
                    warn(failure.message)
                    exitAsCommand(status)
                }
                throw failure
            }
            var edited = try file.read(limit: Keychain.maximumSecretSize)
            defer { wipe(&edited) }
            if original.last != UInt8(ascii: "\n") { edited = Array(withoutTrailingNewline(edited)) }
            if edited.elementsEqual(original) {
                warn("'\(key)' is unchanged; nothing was stored")
                return
            }
            if edited.isEmpty {
                throw CommandFailure.badData(
                    "the edited secret is empty; nothing was stored. To remove it: keychain-cli -s "
                        + "\(shellQuoted(service)) delete -- \(shellQuoted(key.rawValue))")
            }
            let replaced: Bool
            do {
                replaced = try keychain.replace(key, expected: original, with: Data(edited))
            } catch {
                // The backend failed: the edit is kept all the same, and the failure reported.
                if let kept = try? file.keep(edited) { warn(Self.keptNote(kept, key: key, service: service)) }
                throw error
            }
            if replaced {
                warn("stored the edited secret '\(key)'")
                return
            }
            let kept = try file.keep(edited)
            let removed = (try? keychain.exists(key)) == false
            throw CommandFailure(
                kind: .changedMeanwhile,
                message: "'\(key)' was \(removed ? "removed" : "changed") by another program while the editor was "
                    + "open; nothing was stored, and that \(removed ? "removal" : "change") is kept. "
                    + Self.keptNote(kept, key: key, service: service))
        }

        /// Where the edit not stored is kept, and how to store it or drop it.
        private static func keptNote(_ kept: String, key: KeychainKey, service: String) -> String {
            let path = shellQuoted(kept)
            return "Your edit is in \(path) (0600, in memory; gone at logout). Store it over theirs with: "
                + "keychain-cli -s \(shellQuoted(service)) set --raw --from-file \(path) -- "
                + "\(shellQuoted(key.rawValue)) && rm \(path); or drop it: rm \(path)"
        }
    }
}

/// The file `edit` hands the editor: `secret.txt` (named after nothing secret), 0600, alone in a
/// ``PrivateMemoryDirectory`` on `$XDG_RUNTIME_DIR` (never /dev/shm: a file kept after a conflict
/// must go at logout, as the runtime directory does).
struct EditedFile {
    private let directory: PrivateMemoryDirectory
    private static let name = "secret.txt"
    var path: String { "\(directory.path)/\(Self.name)" }

    /// `$XDG_RUNTIME_DIR`, when it is a tmpfs directory of this user's (or root's) alone.
    /// - Throws: ``CommandFailure`` (74) otherwise.
    static func base() throws -> String {
        guard let runtime = Environment.value("XDG_RUNTIME_DIR"), PrivateMemoryDirectory.isSafeMemory(runtime) else {
            throw CommandFailure.io(refusal)
        }
        return runtime
    }

    private static let refusal =
        "edit needs $XDG_RUNTIME_DIR, a tmpfs directory of yours (systemd makes /run/user/$UID at login), and "
        + "it is \(Environment.value("XDG_RUNTIME_DIR") == nil ? "not set" : "not one"): the secret would be "
        + "written to disk, or where another user could swap it; nothing was changed. Log in with a session "
        + "that sets it, or: mkdir -m 700 /dev/shm/$USER && export XDG_RUNTIME_DIR=/dev/shm/$USER"

    init(holding secret: [UInt8], in base: String) throws {
        directory = try PrivateMemoryDirectory(
            prefix: "keychain-cli-edit.", bases: [base], refusal: Self.refusal, failure: Self.failure)
        do {
            try directory.write(secret, to: Self.name, mode: 0o600, failure: Self.failure)
        } catch {
            directory.remove()
            throw error
        }
    }

    /// What the editor left at the file's name (it may have written a new file and renamed it
    /// there, as vim does): a regular file, never followed as a link.
    /// - Throws: ``CommandFailure``: over `limit` bytes (65), gone or not a file (1).
    func read(limit: Int) throws -> [UInt8] {
        let fd = openat(directory.handle, Self.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            if fd >= 0 { close(fd) }
            throw CommandFailure(
                kind: .editorFailed,
                message: "the editor left no file at \(quotedPath(path)) (removed, or replaced by a link or "
                    + "something else); nothing was stored. Run edit again")
        }
        defer { close(fd) }
        guard let bytes = try readAll(fd, limit: limit, name: quotedPath(path)) else {
            throw KeychainError.secretTooLarge(limit: limit)
        }
        return bytes
    }

    /// Keeps `edit` in a new file (0600) beside the private directory, in `$XDG_RUNTIME_DIR`,
    /// which outlives this process (the directory does not).
    /// - Returns: its path.
    func keep(_ edit: [UInt8]) throws -> String {
        var template = Array("\(directory.base)/keychain-cli-edit-kept.XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Self.failure("cannot keep your edit in \(quotedPath(directory.base))") }
        let kept = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let written = fchmod(fd, 0o600) == 0 && edit.withUnsafeBufferPointer { writeAll(fd, $0) }
        close(fd)
        guard written else {
            unlink(kept)
            throw Self.failure("cannot keep your edit in \(quotedPath(kept))")
        }
        return kept
    }

    /// Removes the directory and the file.
    func remove() { directory.remove() }

    private static func failure(_ what: String) -> CommandFailure {
        CommandFailure.io(
            "\(what) for edit (\(String(cString: strerror(errno)))); nothing was stored. Check that "
                + "$XDG_RUNTIME_DIR is writable and has room")
    }
}
