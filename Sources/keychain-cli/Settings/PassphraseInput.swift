import ArgumentParser
import Glibc
import KeychainCore

/// Where the vault's passphrase comes from, first match wins: --passphrase-fd or --passphrase-file
/// (not both: a usage error), $KEYCHAIN_PASSPHRASE, the file keychain-cli.passphrase in
/// $CREDENTIALS_DIRECTORY (systemd's credentials), else a hidden prompt on the terminal
/// (/dev/tty). Never the command line.
/// (`vault passwd` reads the new one likewise: --new-passphrase-fd, --new-passphrase-file,
/// $KEYCHAIN_NEW_PASSPHRASE, the terminal.)
enum PassphraseInput: Sendable, CustomStringConvertible {
    /// The descriptor, and the option that named it (`--passphrase-fd`).
    case descriptor(Int32, option: String)
    /// The file, and the option that named it (`--passphrase-file`).
    case file(String, option: String)
    /// The variable named.
    case environment(String)
    case terminal

    /// The largest passphrase read from a file or descriptor.
    static let limit = 64 * 1024

    /// The detail of ``KeychainError/noPassphrase(detail:)`` when the terminal was the only source
    /// and the command may not ask there (a credential helper).
    static let notAsked = "none of $KEYCHAIN_PASSPHRASE, --passphrase-file or --passphrase-fd is set"

    /// What a credential helper says when the vault needs a passphrase it may not ask for (77).
    static func helperFailure(_ error: any Error) -> any Error {
        guard case KeychainError.noPassphrase(notAsked) = error else { return error }
        return CommandFailure(
            kind: .denied,
            message: "the vault needs a passphrase, and a credential helper never asks for one: set "
                + "$KEYCHAIN_PASSPHRASE where git or docker runs, or give the helper --passphrase-file PATH "
                + "(git config credential.helper 'keychain-cli --passphrase-file PATH'), run 'keychain-cli unlock' "
                + "at a terminal first, or use a team vault with $KEYCHAIN_IDENTITY")
    }

    init(_ settings: Settings) {
        self.init(descriptor: settings.passphraseFD, file: settings.passphraseFile, new: false)
    }

    /// The source of the passphrase (`new`: of `vault passwd`'s new passphrase).
    init(descriptor: Int32?, file: String?, new: Bool) {
        let prefix = new ? "new-" : ""
        let variable = new ? "KEYCHAIN_NEW_PASSPHRASE" : "KEYCHAIN_PASSPHRASE"
        if let descriptor {
            self = .descriptor(descriptor, option: "--\(prefix)passphrase-fd")
        } else if let file {
            self = .file(file, option: "--\(prefix)passphrase-file")
        } else if Environment.bytes(variable) != nil {
            self = .environment(variable)
        } else if !new, let credential = Self.credential() {
            self = .file(credential, option: "the credential")
        } else {
            self = .terminal
        }
    }

    /// The source of the password of a database `import` reads: --source-passphrase-fd,
    /// --source-passphrase-file, else the terminal.
    init(sourceDescriptor descriptor: Int32?, file: String?) {
        if let descriptor {
            self = .descriptor(descriptor, option: "--source-passphrase-fd")
        } else if let file {
            self = .file(file, option: "--source-passphrase-file")
        } else {
            self = .terminal
        }
    }

    /// The source of the passphrase of `ssh-agent`'s keys: --key-passphrase-fd,
    /// --key-passphrase-file, $KEYCHAIN_KEY_PASSPHRASE, else the terminal.
    init(keyDescriptor descriptor: Int32?, file: String?) {
        if let descriptor {
            self = .descriptor(descriptor, option: "--key-passphrase-fd")
        } else if let file {
            self = .file(file, option: "--key-passphrase-file")
        } else if Environment.bytes("KEYCHAIN_KEY_PASSPHRASE") != nil {
            self = .environment("KEYCHAIN_KEY_PASSPHRASE")
        } else {
            self = .terminal
        }
    }

    var isTerminal: Bool { if case .terminal = self { true } else { false } }

    /// A secret other than the vault's (an ssh key's passphrase, a KeePass database's password)
    /// from this source, else asked at the terminal with `question`.
    /// - Parameters:
    ///   - what: what it is, for messages: "password for 'db.kdbx'".
    ///   - options: how to give it without a terminal, for the message when there is none.
    /// - Throws: ``CommandFailure`` (77) when it cannot be had.
    func readOther(_ what: String, asking question: String, options: String) throws -> [UInt8] {
        guard case .terminal = self else {
            do {
                return try read(.unlock, vault: what)
            } catch KeychainError.noPassphrase(let detail) {
                throw CommandFailure(kind: .denied, message: "no \(what): \(detail)")
            }
        }
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            throw CommandFailure(
                kind: .denied,
                message: "the \(what) is needed, and there is no terminal to ask at: give it with \(options)")
        }
        defer { close(tty) }
        guard let typed = try readHiddenLine(prompt: question, input: tty, output: tty) else {
            throw CommandFailure(kind: .denied, message: "no \(what) was typed; nothing was stored")
        }
        return typed
    }

    /// The checks of a pair of options that give a passphrase, `--PREFIX-passphrase-file` and
    /// `--PREFIX-passphrase-fd`: not both, a descriptor number that is not `--passphrase-fd`'s
    /// (`vaultDescriptor`), a path that is not a secret itself.
    /// - Throws: ``ValidationError``, the argument parser's usage error.
    static func validate(prefix: String, file: String?, descriptor: Int32?, vaultDescriptor: Int32?) throws {
        let (fileOption, fdOption) = ("--\(prefix)-passphrase-file", "--\(prefix)-passphrase-fd")
        if file != nil && descriptor != nil { throw ValidationError("give \(fileOption) or \(fdOption), not both") }
        if let descriptor, descriptor < 0 {
            throw ValidationError("\(fdOption) must be an open file descriptor number")
        }
        if let descriptor, descriptor == vaultDescriptor {
            throw ValidationError("\(fdOption) and --passphrase-fd must be different descriptors")
        }
        do {
            try PathValue.check(file, of: fileOption)
        } catch let failure as CommandFailure {
            throw ValidationError(failure.message)
        }
    }

    /// systemd's credential of this service (`LoadCredential=keychain-cli.passphrase:…`,
    /// `LoadCredentialEncrypted=`), where one is given.
    private static func credential() -> String? {
        guard let directory = Environment.value("CREDENTIALS_DIRECTORY"), directory.hasPrefix("/")
        else { return nil }
        let path = "\(directory)/keychain-cli.passphrase"
        return access(path, F_OK) == 0 ? path : nil
    }

    var description: String {
        switch self {
        case .descriptor(let fd, let option): "\(option) \(fd)"
        case .file(let path, let option): "\(option) \(quotedPath(path))"
        case .environment(let name): "$\(name)"
        case .terminal: "a prompt on the terminal"
        }
    }

    /// The passphrase, read now.
    /// - Throws: ``KeychainError/noPassphrase(detail:)`` when this source cannot give one.
    func read(_ purpose: VaultStore.PassphrasePurpose, vault: String) throws(KeychainError) -> [UInt8] {
        do {
            switch self {
            case .descriptor(let fd, _):
                defer { release(fd) }
                return try strippingNewline(readAll(fd, limit: Self.limit, name: description), from: description)
            case .file(let path, _):
                return try strippingNewline(readInput(path: path, limit: Self.limit), from: description)
            case .environment(let name):
                guard let value = Environment.bytes(name) else {
                    throw KeychainError.noPassphrase(detail: "$\(name) was unset")
                }
                return value  // the bytes, as given
            case .terminal:
                guard purpose != .reopen else {
                    throw KeychainError.noPassphrase(detail: "it is not asked again at the terminal")
                }
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
    /// does not inherit it (``nullStandardDescriptor(_:)`` for a standard one).
    private func release(_ fd: Int32) {
        guard fd <= STDERR_FILENO else {
            close(fd)
            return
        }
        nullStandardDescriptor(fd)
    }

    private func strippingNewline(_ bytes: [UInt8]?, from source: String) throws -> [UInt8] {
        guard let bytes else { throw CommandFailure.badData("\(source) holds more than \(Self.limit) bytes") }
        return Array(withoutTrailingNewline(bytes))
    }

    private func prompt(_ purpose: VaultStore.PassphrasePurpose, vault: String) throws -> [UInt8] {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else {
            let (variable, option) = purpose == .change ? ("NEW_", "new-") : ("", "")
            throw KeychainError.noPassphrase(
                detail: "none of $KEYCHAIN_\(variable)PASSPHRASE, --\(option)passphrase-file or "
                    + "--\(option)passphrase-fd is set, and there is no terminal to ask at")
        }
        defer { close(tty) }
        let question =
            switch purpose {
            case .create: "New vault \(vault). Passphrase: "
            case .change: "New passphrase for the vault \(vault): "
            case .unlock, .reopen: "Passphrase for the vault \(vault): "
            }
        guard let first = try readHiddenLine(prompt: question, input: tty, output: tty) else {
            throw KeychainError.noPassphrase(detail: "no passphrase was typed")
        }
        if purpose != .unlock {
            let second = try readHiddenLine(prompt: "Repeat the passphrase: ", input: tty, output: tty)
            guard second == first else {
                throw KeychainError.noPassphrase(detail: "the two passphrases typed differ; nothing was stored")
            }
        }
        return first
    }
}

/// Puts /dev/null on standard input, output or error `fd` once a secret was read from it, so that
/// a command `exec` or `serve` starts still has the descriptor (at end of input) but cannot read
/// the secret again (reopening /dev/stdin, or seeking back in a file).
func nullStandardDescriptor(_ fd: Int32) {
    let null = open("/dev/null", O_RDWR | O_CLOEXEC)
    if null >= 0 {
        dup2(null, fd)
        close(null)
    }
}
