/// The global options that take a value, the one list of their names: the argument parser's
/// ``GlobalOptions`` spells its options from it, the fast path parses by it, and the usage check
/// skips their values by it.
enum GlobalOption: CaseIterable {
    case service, timeout, backend, vault, passphraseFile, passphraseFD, identity, identityFD, signingKey,
        allowedSigners

    /// The long name, with its dashes.
    var long: String {
        switch self {
        case .service: "--service"
        case .timeout: "--timeout"
        case .backend: "--backend"
        case .vault: "--vault"
        case .passphraseFile: "--passphrase-file"
        case .passphraseFD: "--passphrase-fd"
        case .identity: "--identity"
        case .identityFD: "--identity-fd"
        case .signingKey: "--signing-key"
        case .allowedSigners: "--allowed-signers"
        }
    }

    /// The short name, with its dash, where there is one.
    var short: String? { self == .service ? "-s" : nil }

    /// Every name of every option, short and long.
    static let names: [String] = allCases.flatMap { [$0.short, $0.long].compactMap { $0 } }

    /// The option `name` names. A switch, not a lookup table: the fast path runs this, and
    /// instantiating a dictionary type at run time scans the binary's protocol conformances.
    init?(name: String) {
        switch name {
        case "-s", "--service": self = .service
        case "--timeout": self = .timeout
        case "--backend": self = .backend
        case "--vault": self = .vault
        case "--passphrase-file": self = .passphraseFile
        case "--passphrase-fd": self = .passphraseFD
        case "--identity": self = .identity
        case "--identity-fd": self = .identityFD
        case "--signing-key": self = .signingKey
        case "--allowed-signers": self = .allowedSigners
        default: return nil
        }
    }

    /// Sets this option of `settings` to `value`, as the argument parser reads it: false when
    /// it was given already or the parser would not take `value` for it (not a number, a
    /// backend's name, or, for an option that does not read its value unconditionally, a word
    /// starting with a dash). Whether the options together are valid is ``Settings/misuse``.
    func assign(_ value: String, to settings: inout Settings) -> Bool {
        switch self {
        case .service where settings.service == nil && !value.hasPrefix("-"): settings.service = value
        case .timeout where settings.timeout == nil: settings.timeout = Double(value)
        case .backend where settings.backend == nil && !value.hasPrefix("-"):
            settings.backend = Backend(rawValue: value)
        case .vault where settings.vault == nil && !value.hasPrefix("-"): settings.vault = value
        case .passphraseFile where settings.passphraseFile == nil && !value.hasPrefix("-"):
            settings.passphraseFile = value
        case .identity where settings.identity == nil && !value.hasPrefix("-"): settings.identity = value
        case .signingKey where settings.signingKey == nil && !value.hasPrefix("-"): settings.signingKey = value
        case .allowedSigners where settings.allowedSigners == nil && !value.hasPrefix("-"):
            settings.allowedSigners = value
        case .passphraseFD where settings.passphraseFD == nil: settings.passphraseFD = Int32(value)
        case .identityFD where settings.identityFD == nil: settings.identityFD = Int32(value)
        default: return false
        }
        // A value the parser cannot convert leaves the option unset.
        return switch self {
        case .timeout: settings.timeout != nil
        case .backend: settings.backend != nil
        case .passphraseFD: settings.passphraseFD != nil
        case .identityFD: settings.identityFD != nil
        default: true
        }
    }
}
