import Glibc
import KeychainCore

/// The settings of one invocation: what the global options gave (nil: not given), and how each
/// setting is resolved, flag first, then its environment variable, then the default. Every
/// store the CLI opens is built from these (StoreFactory.swift), and nowhere else.
struct Settings {
    var service: String?
    var timeout: Double?
    var backend: Backend?
    var vault: String?
    var passphraseFile: String?
    var passphraseFD: Int32?
    var identity: String?
    var identityFD: Int32?
    var signingKey: String?
    var allowedSigners: String?
    var requireSigned = false
    /// Whether the vault's passphrase may be asked for at the terminal (the credential helpers,
    /// which git and docker run with a terminal around them, never ask).
    var mayPrompt = true

    /// The timeouts accepted by --timeout and $KEYCHAIN_TIMEOUT, in seconds: above 0, at most a day.
    static func isValidTimeout(_ seconds: Double) -> Bool { seconds > 0 && seconds <= 86_400 }
    static let timeoutRule = "a number of seconds above 0 and at most 86400"

    /// What is wrong with these options together, as the argument parser words it; nil when
    /// nothing is. The one list of the global options' rules: ``GlobalOptions`` throws it, and
    /// the fast path leaves a line that breaks one to the parser.
    var misuse: String? {
        if let timeout, !Self.isValidTimeout(timeout) { return "--timeout must be \(Self.timeoutRule)" }
        if passphraseFile != nil && passphraseFD != nil {
            return "give the passphrase by --passphrase-file or by --passphrase-fd, not both"
        }
        if vault?.isEmpty == true || passphraseFile?.isEmpty == true || identity?.isEmpty == true
            || signingKey?.isEmpty == true || allowedSigners?.isEmpty == true
        {
            return "--vault, --passphrase-file, --identity, --signing-key and --allowed-signers need a path"
        }
        if let passphraseFD, passphraseFD < 0 { return "--passphrase-fd must be an open file descriptor number" }
        if let identityFD, identityFD < 0 { return "--identity-fd must be an open file descriptor number" }
        if identity != nil && identityFD != nil {
            return "give the identity by --identity or by --identity-fd, not both"
        }
        return nil
    }

    /// Whether an option of the vault (--vault, --passphrase-*, --identity*, --signing-key,
    /// --allowed-signers, --require-signed) is given.
    var hasVaultOption: Bool {
        vault != nil || passphraseFile != nil || passphraseFD != nil || identity != nil || identityFD != nil
            || signingKey != nil || allowedSigners != nil || requireSigned
    }

    /// The service: --service, else $KEYCHAIN_SERVICE, else keychain-cli.
    func serviceName() throws -> ServiceName {
        try ServiceName(service ?? (try environment("KEYCHAIN_SERVICE")) ?? ServiceName.defaultName)
    }

    /// The service of a credential helper: --service, else `fixed` (git and docker set no variables
    /// of ours, so $KEYCHAIN_SERVICE, meant for the user's own keys, is not read).
    func serviceName(helperDefault fixed: String) throws -> ServiceName {
        try ServiceName(service ?? fixed)
    }

    /// --timeout, else $KEYCHAIN_TIMEOUT, else the stores' default.
    /// - Throws: a usage error when $KEYCHAIN_TIMEOUT is out of ``isValidTimeout(_:)``.
    func resolvedTimeout() throws -> Double {
        if let timeout { return timeout }
        guard let text = try environment("KEYCHAIN_TIMEOUT") else { return defaultStoreTimeout }
        guard let seconds = Double(text), Self.isValidTimeout(seconds) else {
            throw CommandFailure.usage(
                "KEYCHAIN_TIMEOUT is \(quotedValue(text, expected: "a number")); it must be \(Self.timeoutRule)")
        }
        return seconds
    }

    /// The backend of `--backend`, else of $KEYCHAIN_BACKEND, else the vault when a vault option
    /// is given, else the Secret Service.
    /// - Throws: a usage error for an unknown $KEYCHAIN_BACKEND, or vault options with another
    ///   backend chosen.
    func resolvedBackend() throws -> Backend {
        var chosen = backend ?? (hasVaultOption ? .vault : .secretService)
        if backend == nil, let name = try environment("KEYCHAIN_BACKEND") {
            guard let named = Backend(rawValue: name) else {
                throw CommandFailure.usage(
                    "KEYCHAIN_BACKEND is \(quotedValue(name, expected: "a backend")); it must be "
                        + Backend.allCases.map(\.rawValue).joined(separator: " or "))
            }
            chosen = named
        }
        if chosen != .vault && hasVaultOption {
            throw CommandFailure.usage(
                "--vault, --passphrase-file, --passphrase-fd, --identity, --identity-fd, --signing-key, --allowed-signers and --require-signed need the vault backend: add --backend vault (the \(chosen.rawValue) backend was chosen)"
            )
        }
        return chosen
    }
}

/// Where secrets are kept.
enum Backend: String, CaseIterable {
    case secretService = "secret-service"
    case vault
    case openbao
}

/// The environment variable `name`, or nil when it is unset or empty.
/// - Throws: a usage error when it is not valid UTF-8 (Swift would turn bad bytes into U+FFFD,
///   so that two different values would name the same service or file).
func environment(_ name: String) throws -> String? {
    do {
        return try Environment.text(name)
    } catch {
        throw CommandFailure.usage("$\(name) is not valid UTF-8 text. Set it to UTF-8 text, or unset it")
    }
}

extension Settings {
    /// The variables that hold a secret of keychain-cli's own (docs/commands.md#environment).
    static let secretVariables = [
        "KEYCHAIN_PASSPHRASE", "KEYCHAIN_NEW_PASSPHRASE", "KEYCHAIN_OPENBAO_SECRET_ID", "KEYCHAIN_OPENBAO_JWT",
        "BAO_TOKEN", "VAULT_TOKEN", "KEYCHAIN_IDENTITY_FD", "KEYCHAIN_KEY_PASSPHRASE",
    ]

    /// Keeps the vault's passphrases, its identity and the OpenBao token and login secrets from a
    /// command keychain-cli runs (`exec`, `serve -- COMMAND`): they are ours, not the command's
    /// (a command that needs one maps it from the keychain, `--env BAO_TOKEN=KEY`). The variables
    /// go ($CREDENTIALS_DIRECTORY too where it holds keychain-cli.passphrase), and the passphrase and identity descriptors are closed on exec (a standard one stays:
    /// once read it is /dev/null, see PassphraseInput); `KEYCHAIN_IDENTITY_FD` goes with its
    /// descriptor, so that a keychain-cli inside the command does not read a closed one.
    func withholdSecretsFromCommands() {
        let identityDescriptor = identityFD ?? Environment.value("KEYCHAIN_IDENTITY_FD").flatMap { Int32($0) }
        for name in Self.secretVariables { unsetenv(name) }
        // systemd's credentials directory, where it holds our passphrase (PassphraseInput).
        if let directory = Environment.value("CREDENTIALS_DIRECTORY"),
            access("\(directory)/keychain-cli.passphrase", F_OK) == 0
        {
            unsetenv("CREDENTIALS_DIRECTORY")
        }
        for fd in [passphraseFD, identityDescriptor].compactMap(\.self) where fd > STDERR_FILENO {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }
}
