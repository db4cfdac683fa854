import ArgumentParser
import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// Options every command takes, before or after its name (`-s ci list` and `list -s ci`).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: [.customShort("s"), .long],
        help: ArgumentHelp(
            "The service (namespace) of the keys. Default: $KEYCHAIN_SERVICE, else \"keychain-cli\".",
            valueName: "name"))
    var service: String?

    // Unconditional: "--timeout -1" is a bad number, not a missing value followed by an option.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Give up when the keyring (or an unlock prompt) has not answered for this many seconds, or "
                + "when an OpenBao operation (retries included) has not finished. Default: $KEYCHAIN_TIMEOUT, else 5.",
            valueName: "seconds"))
    var timeout: Double?

    @Option(
        help: ArgumentHelp(
            "Where secrets are kept: secret-service (the desktop keyring), vault (an encrypted file, "
                + "for CI and servers) or openbao (a KV version 2 mount of an OpenBao or HashiCorp Vault "
                + "server, set up by $BAO_ADDR and $BAO_TOKEN as for the bao CLI). "
                + "Default: $KEYCHAIN_BACKEND, else vault when a vault option (--vault, --passphrase-*, "
                + "--identity*) is given, else secret-service.",
            valueName: "backend"))
    var backend: Backend?

    @Option(
        help: ArgumentHelp(
            "The vault file. Default: $KEYCHAIN_VAULT, else $XDG_DATA_HOME/keychain-cli/vault.age "
                + "(~/.local/share/keychain-cli/vault.age).",
            valueName: "path"))
    var vault: String?

    @Option(
        help: ArgumentHelp(
            "Read the vault's passphrase from this file (one trailing newline is ignored). "
                + "Default: $KEYCHAIN_PASSPHRASE, else a prompt on the terminal.",
            valueName: "path"))
    var passphraseFile: String?

    @Option(
        name: .customLong("passphrase-fd"),
        help: ArgumentHelp(
            "Read the vault's passphrase from this open file descriptor, to its end (one trailing "
                + "newline is ignored).",
            valueName: "n"))
    var passphraseFD: Int32?

    @Option(
        help: ArgumentHelp(
            "An age identity file (AGE-SECRET-KEY-1… lines, as age-keygen writes) or an unencrypted "
                + "OpenSSH ed25519 private key, that opens a team vault. Default: $KEYCHAIN_IDENTITY.",
            valueName: "path"))
    var identity: String?

    @Option(
        name: .customLong("identity-fd"),
        help: ArgumentHelp(
            "Read the age identity file from this open file descriptor, to its end (a CI secret held "
                + "in memory). Default: $KEYCHAIN_IDENTITY_FD.",
            valueName: "n"))
    var identityFD: Int32?

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most 86400")
        }
        if passphraseFile != nil && passphraseFD != nil {
            throw ValidationError("give the passphrase by --passphrase-file or by --passphrase-fd, not both")
        }
        if vault?.isEmpty == true || passphraseFile?.isEmpty == true || identity?.isEmpty == true {
            throw ValidationError("--vault, --passphrase-file and --identity need a path")
        }
        if let passphraseFD, passphraseFD < 0 {
            throw ValidationError("--passphrase-fd must be an open file descriptor number")
        }
        if let identityFD, identityFD < 0 {
            throw ValidationError("--identity-fd must be an open file descriptor number")
        }
        if identity != nil && identityFD != nil {
            throw ValidationError("give the identity by --identity or by --identity-fd, not both")
        }
    }

    /// These options, with those not given here taken from `outer` (given before the command name).
    func over(_ outer: GlobalOptions) -> KeychainOptions {
        KeychainOptions(
            service: service ?? outer.service, timeout: timeout ?? outer.timeout, backend: backend ?? outer.backend,
            vault: vault ?? outer.vault, passphraseFile: passphraseFile ?? outer.passphraseFile,
            passphraseFD: passphraseFD ?? outer.passphraseFD, identity: identity ?? outer.identity,
            identityFD: identityFD ?? outer.identityFD)
    }
}

/// The global options of one invocation as plain values (nil: not given), for ``makeKeychain(_:listing:)``.
struct KeychainOptions {
    var service: String?
    var timeout: Double?
    var backend: Backend?
    var vault: String?
    var passphraseFile: String?
    var passphraseFD: Int32?
    var identity: String?
    var identityFD: Int32?
    /// Whether the vault's passphrase may be asked for at the terminal (the credential helpers,
    /// which git and docker run with a terminal around them, never ask).
    var mayPrompt = true
}

/// Where secrets are kept.
enum Backend: String, ExpressibleByArgument, CaseIterable {
    case secretService = "secret-service"
    case vault
    case openbao
}

/// What a subcommand needs from the global options, whether given to it or to the root command.
protocol KeychainCommand: ParsableCommand {
    var globals: GlobalOptions { get }
    var root: KeychainCLI { get }
}

extension KeychainCommand {
    /// The options of this invocation: those given after the command name win over those before.
    var options: KeychainOptions { globals.over(root.globals) }

    /// ``options`` for a credential helper, which never asks for the vault's passphrase.
    var helperOptions: KeychainOptions {
        var options = options
        options.mayPrompt = false
        return options
    }

    /// The keychain of the chosen service on the chosen backend.
    func keychain(listing: SecretServiceStore.Listing = .full) throws -> Keychain {
        try makeKeychain(options, listing: listing)
    }
}

/// The keychain the options choose: the service falls back to $KEYCHAIN_SERVICE, then to the
/// default; the backend to $KEYCHAIN_BACKEND, then to the Secret Service.
func makeKeychain(_ options: KeychainOptions, listing: SecretServiceStore.Listing = .full) throws -> Keychain {
    Keychain(service: try serviceName(options), store: try makeStore(options, listing: listing))
}

/// The service the options name, else $KEYCHAIN_SERVICE, else the default.
func serviceName(_ options: KeychainOptions) throws -> ServiceName {
    try ServiceName(options.service ?? (try environment("KEYCHAIN_SERVICE")) ?? ServiceName.defaultName)
}

/// The backend the options choose, never another one: an unknown $KEYCHAIN_BACKEND is an error,
/// and vault options without the vault backend are refused rather than ignored.
func makeStore(_ options: KeychainOptions, listing: SecretServiceStore.Listing = .full) throws -> any SecretStore {
    let timeout = try chosenTimeout(options)
    switch try chosenBackend(options) {
    case .secretService:
        return SecretServiceStore(timeout: timeout, listing: listing)
    case .vault:
        return try makeVaultStore(options, timeout: timeout)
    case .openbao:
        return try makeOpenBaoStore(timeout: timeout, listing: listing)
    }
}

/// --timeout, else $KEYCHAIN_TIMEOUT, else the default.
func chosenTimeout(_ options: KeychainOptions) throws -> Double {
    try options.timeout ?? environmentTimeout() ?? SecretServiceStore.defaultTimeout
}

/// $KEYCHAIN_TIMEOUT, for callers that pass no flags (git runs its credential helpers so).
/// - Throws: a usage error when it is not a number of seconds above 0 and at most 86400.
func environmentTimeout() throws -> Double? {
    guard let text = try environment("KEYCHAIN_TIMEOUT") else { return nil }
    guard let seconds = Double(text), seconds > 0 && seconds <= 86_400 else {
        throw CommandFailure.usage(
            "KEYCHAIN_TIMEOUT is \(quotedValue(text, expected: "a number")); it must be a number of seconds above 0 and at most 86400"
        )
    }
    return seconds
}

/// The backend of `--backend`, else of $KEYCHAIN_BACKEND, else the vault when a vault option
/// (--vault, --passphrase-*, --identity*) is given, else the Secret Service.
/// - Throws: a usage error for an unknown $KEYCHAIN_BACKEND, or vault options with another
///   backend chosen.
func chosenBackend(_ options: KeychainOptions) throws -> Backend {
    let vaultOptions =
        options.vault != nil || options.passphraseFile != nil || options.passphraseFD != nil
        || options.identity != nil || options.identityFD != nil
    var backend = options.backend ?? (vaultOptions ? .vault : .secretService)
    if options.backend == nil, let name = try environment("KEYCHAIN_BACKEND") {
        guard let named = Backend(rawValue: name) else {
            throw CommandFailure.usage(
                "KEYCHAIN_BACKEND is \(quotedValue(name, expected: "a backend")); it must be "
                    + Backend.allCases.map(\.rawValue).joined(separator: " or "))
        }
        backend = named
    }
    if backend != .vault && vaultOptions {
        throw CommandFailure.usage(
            "--vault, --passphrase-file, --passphrase-fd, --identity and --identity-fd need the vault backend: add --backend vault (the \(backend.rawValue) backend was chosen)"
        )
    }
    return backend
}

func makeVaultStore(_ options: KeychainOptions, timeout: Double, newPassphrase: PassphraseSource? = nil) throws
    -> VaultStore
{
    try PathValue.check(options)
    let variable = try environment("KEYCHAIN_VAULT")
    guard
        let path = try options.vault ?? variable ?? VaultStore.defaultPath(environment: try processEnvironment())
    else {
        throw CommandFailure.usage("no vault path: pass --vault PATH, or set KEYCHAIN_VAULT or HOME")
    }
    if path.hasSuffix("/") {
        throw CommandFailure.usage(
            "the vault path \(quotedPath(path)) names a directory; give a file in it, e.g. \(quotedPath(path + "vault.age"))"
        )
    }
    var workFactor = VaultStore.defaultWorkFactor
    if let text = try environment("KEYCHAIN_VAULT_WORK_FACTOR") {
        guard let value = Int(text), VaultStore.workFactors.contains(value) else {
            throw CommandFailure.usage(
                "KEYCHAIN_VAULT_WORK_FACTOR is \(quotedValue(text, expected: "a number")); it must be a whole number from "
                    + "\(VaultStore.workFactors.lowerBound) to \(VaultStore.workFactors.upperBound) (log2 of scrypt's N)"
            )
        }
        workFactor = value
    }
    let source = PassphraseSource(options)
    let mayPrompt = options.mayPrompt
    return VaultStore(
        path: path, workFactor: workFactor, lockTimeout: timeout, identities: try identities(options, vault: path)
    ) { purpose throws(KeychainError) in
        if purpose == .change, let newPassphrase {
            do throws(KeychainError) {
                return try newPassphrase.read(purpose, vault: path)
            } catch .noPassphrase(let detail) {
                throw .noPassphrase(detail: KeychainError.newPassphrase + detail)
            } catch {
                throw error
            }
        }
        if case .terminal = source, !mayPrompt {
            throw .noPassphrase(detail: PassphraseSource.notAsked)
        }
        return try source.read(purpose, vault: path)
    }
}

/// The OpenBao store the environment describes (BAO_*, VAULT_*, KEYCHAIN_OPENBAO_*, HOME).
func makeOpenBaoStore(timeout: Double, listing: SecretServiceStore.Listing = .full) throws -> OpenBaoStore {
    var variables: [String: String] = [:]
    for prefix in ["BAO_", "VAULT_"] {
        for name in ["ADDR", "TOKEN", "NAMESPACE", "CACERT", "CAPATH"] {
            variables[prefix + name] = try environment(prefix + name)
        }
    }
    for name in [
        "MOUNT", "ROLE_ID", "ROLE_ID_FILE", "SECRET_ID", "SECRET_ID_FILE", "APPROLE_MOUNT", "JWT", "JWT_FILE",
        "JWT_ROLE", "JWT_MOUNT",
    ] {
        variables["KEYCHAIN_OPENBAO_" + name] = try environment("KEYCHAIN_OPENBAO_" + name)
    }
    variables["HOME"] = try environment("HOME")
    return OpenBaoStore(
        configuration: try OpenBaoConfiguration.fromEnvironment(variables), timeout: timeout,
        readsCreationDates: listing == .full)
}

/// The environment variable `name`, or nil when it is unset or empty.
/// - Throws: a usage error when it is not valid UTF-8 (Swift would turn bad bytes into U+FFFD,
///   so that two different values would name the same service or file).
func environment(_ name: String) throws -> String? {
    guard let value = getenv(name) else { return nil }
    guard let text = String(validatingCString: value) else {
        throw CommandFailure.usage("$\(name) is not valid UTF-8 text. Set it to UTF-8 text, or unset it")
    }
    return text.isEmpty ? nil : text
}

private func processEnvironment() throws -> [String: String] {
    ["XDG_DATA_HOME": try environment("XDG_DATA_HOME"), "HOME": try environment("HOME")].compactMapValues { $0 }
}
