import ArgumentParser
import Glibc
import KeychainCore

/// The options of `cp` and `mv`: replace or not, whole services, and the backend (with its vault
/// options) secrets go to when it is not the one they come from.
struct TransferOptions: ParsableArguments {
    @Argument(
        help: ArgumentHelp(
            "SRC and DST: KEY, SERVICE/KEY or keychain://SERVICE/KEY (services with -r).", valueName: "address"),
        completion: .keyNames)
    var addresses: [String] = []

    @Flag(name: .shortAndLong, help: "Replace a secret stored at DST (without it, exit 73 and nothing is written).")
    var force = false

    @Flag(
        name: .shortAndLong,
        help: ArgumentHelp(
            "SRC and DST are services: every item of SRC goes to DST under its own key. Refused (73) before "
                + "anything is written when one of those keys is stored in DST, unless --force."))
    var recursive = false

    @Option(
        name: .customLong("service-to"),
        help: ArgumentHelp(
            "Every item of the service (-s) goes to service NEW under its own key: the same as -r SERVICE NEW.",
            valueName: "new"))
    var serviceTo: String?

    @Option(
        name: .customLong("to-backend"),
        help: ArgumentHelp(
            "Where DST is: secret-service, vault or openbao (set up as for --backend). Default: the backend of SRC, "
                + "or vault when a --to-vault option is given.",
            valueName: "backend"))
    var toBackend: Backend?

    @Option(
        name: .customLong("to-vault"),
        help: ArgumentHelp(
            "DST's vault file or tree vault. Default: $KEYCHAIN_VAULT, else the default vault.", valueName: "path"),
        completion: .file())
    var toVault: String?

    @Option(
        name: .customLong("to-passphrase-file"),
        help: ArgumentHelp(
            "Read DST's vault passphrase from this file. Default: $KEYCHAIN_PASSPHRASE, else a prompt.",
            valueName: "path"), completion: .file())
    var toPassphraseFile: String?

    @Option(
        name: .customLong("to-passphrase-fd"), parsing: .unconditional,
        help: ArgumentHelp("Read DST's vault passphrase from this open file descriptor.", valueName: "n"))
    var toPassphraseFD: Int32?

    @Option(
        name: .customLong("to-identity"),
        help: ArgumentHelp(
            "An age identity or OpenSSH key that opens DST's team vault. Default: $KEYCHAIN_IDENTITY.",
            valueName: "path"), completion: .file())
    var toIdentity: String?

    @Option(
        name: .customLong("to-identity-fd"), parsing: .unconditional,
        help: ArgumentHelp("Read DST's age identity file from this open file descriptor.", valueName: "n"))
    var toIdentityFD: Int32?

    /// Whether a --to-* option names the target.
    var namesTarget: Bool {
        toBackend != nil || hasVaultOption
    }

    private var hasVaultOption: Bool {
        toVault != nil || toPassphraseFile != nil || toPassphraseFD != nil || toIdentity != nil || toIdentityFD != nil
    }

    func validate() throws {
        if serviceTo != nil && recursive { throw ValidationError("give --service-to NEW or -r SRC DST, not both") }
        if let toBackend, toBackend != .vault, hasVaultOption {
            throw ValidationError(
                "--to-vault, --to-passphrase-*, --to-identity* need --to-backend vault (\(toBackend.rawValue) was given)"
            )
        }
        let target = Settings(
            backend: toBackend, vault: toVault, passphraseFile: toPassphraseFile, passphraseFD: toPassphraseFD,
            identity: toIdentity, identityFD: toIdentityFD)
        if let misuse = target.misuse {
            throw ValidationError(misuse.replacing("--", with: "--to-"))
        }
    }

    /// The settings of where secrets go: `source`'s when no --to-* option is given; else the
    /// --to-* options, and for what they leave out the environment (as for the source's), never
    /// the source's own vault options but --signing-key (the user's own key signs DST's writes too).
    func target(of source: Settings) -> Settings {
        guard namesTarget else { return source }
        var target = Settings(
            service: source.service, timeout: source.timeout, backend: toBackend ?? (hasVaultOption ? .vault : nil),
            vault: toVault, passphraseFile: toPassphraseFile, passphraseFD: toPassphraseFD, identity: toIdentity,
            identityFD: toIdentityFD)
        target.mayPrompt = source.mayPrompt
        if target.backend == nil { target.backend = try? source.resolvedBackend() }
        if target.backend == .vault { target.signingKey = source.signingKey }
        return target
    }
}

extension Settings {
    /// Whether `other` opens the same store as these settings: the same backend, and for the
    /// vault the same file or tree, known by its device and inode (a symbolic link, `./`, a
    /// bind mount), or for a file not made yet, by its directory's and its name.
    func opensTheSameStore(as other: Settings) throws -> Bool {
        let backend = try resolvedBackend()
        guard try other.resolvedBackend() == backend else { return false }
        guard backend == .vault else { return true }
        return Self.identity(try vaultPath()) == Self.identity(try other.vaultPath())
    }

    /// What names the vault at `path`: its device and inode; for one that does not exist yet,
    /// its directory's and its name; else the path itself.
    private static func identity(_ path: String) -> String {
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        var info = stat()
        if stat(trimmed, &info) == 0 { return "\(info.st_dev):\(info.st_ino)" }
        let (directory, name) = splitPath(trimmed)
        guard stat(directory, &info) == 0 else { return trimmed }
        return "\(info.st_dev):\(info.st_ino)/\(name)"
    }
}
