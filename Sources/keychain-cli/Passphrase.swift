import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where the vault's passphrase comes from, first match wins: --passphrase-fd, --passphrase-file,
/// $KEYCHAIN_PASSPHRASE, else a hidden prompt on the terminal (/dev/tty). Never the command line.
enum PassphraseSource: Sendable, CustomStringConvertible {
    case descriptor(Int32)
    case file(String)
    case environment
    case terminal

    /// The largest passphrase read from a file or descriptor.
    static let limit = 64 * 1024

    init(_ options: KeychainOptions) {
        if let fd = options.passphraseFD {
            self = .descriptor(fd)
        } else if let path = options.passphraseFile {
            self = .file(path)
        } else if getenv("KEYCHAIN_PASSPHRASE") != nil {
            self = .environment
        } else {
            self = .terminal
        }
    }

    var description: String {
        switch self {
        case .descriptor(let fd): "--passphrase-fd \(fd)"
        case .file(let path): "--passphrase-file \(path)"
        case .environment: "$KEYCHAIN_PASSPHRASE"
        case .terminal: "a prompt on the terminal"
        }
    }

    /// The passphrase, read now.
    /// - Throws: ``KeychainError/noPassphrase(detail:)`` when this source cannot give one.
    func read(_ purpose: VaultStore.PassphrasePurpose, vault: String) throws(KeychainError) -> [UInt8] {
        do {
            switch self {
            case .descriptor(let fd):
                defer { release(fd) }
                return try strippingNewline(
                    readAll(fd, limit: Self.limit, name: "--passphrase-fd \(fd)"), from: "--passphrase-fd \(fd)")
            case .file(let path):
                return try strippingNewline(readInput(path: path, limit: Self.limit), from: "--passphrase-file")
            case .environment:
                guard let value = getenv("KEYCHAIN_PASSPHRASE") else {
                    throw KeychainError.noPassphrase(detail: "$KEYCHAIN_PASSPHRASE was unset")
                }
                return Array(UnsafeRawBufferPointer(start: value, count: strlen(value)))  // the bytes, as given
            case .terminal:
                return try prompt(purpose, vault: vault)
            }
        } catch let error as KeychainError {
            throw error
        } catch let failure as CommandFailure {
            throw KeychainError.noPassphrase(detail: failure.message)
        } catch {
            throw KeychainError.noPassphrase(detail: "\(error)")
        }
    }

    /// Closes the passphrase's descriptor, read to its end, so that a command started by `exec`
    /// does not inherit it; standard input, output or error become /dev/null instead, so that the
    /// command still has them (at end of input, as the passphrase left it).
    private func release(_ fd: Int32) {
        guard fd <= STDERR_FILENO else {
            close(fd)
            return
        }
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        if null >= 0 {
            dup2(null, fd)
            close(null)
        }
    }

    private func strippingNewline(_ bytes: [UInt8]?, from source: String) throws -> [UInt8] {
        guard let bytes else { throw CommandFailure.badData("\(source) holds more than \(Self.limit) bytes") }
        return Array(withoutTrailingNewline(bytes))
    }

    private func prompt(_ purpose: VaultStore.PassphrasePurpose, vault: String) throws -> [UInt8] {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw KeychainError.noPassphrase(
                detail: "none of $KEYCHAIN_PASSPHRASE, --passphrase-file or --passphrase-fd is set, "
                    + "and there is no terminal to ask at")
        }
        defer { close(tty) }
        let question = purpose == .create ? "New vault \(vault). Passphrase: " : "Passphrase for the vault \(vault): "
        guard let first = try readHiddenLine(prompt: question, input: tty, output: tty) else {
            throw KeychainError.noPassphrase(detail: "no passphrase was typed")
        }
        if purpose == .create {
            let second = try readHiddenLine(prompt: "Repeat the passphrase: ", input: tty, output: tty)
            guard second == first else {
                throw KeychainError.noPassphrase(detail: "the two passphrases typed differ; nothing was stored")
            }
        }
        return first
    }
}
