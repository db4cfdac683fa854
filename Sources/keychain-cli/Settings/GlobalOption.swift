/// The global options that take a value, the one list of their names: the argument parser's
/// ``GlobalOptions`` spells its options from it, the fast path parses by it, and the usage check
/// skips their values by it.
enum GlobalOption: CaseIterable {
    case service, timeout, backend, vault, passphraseFile, passphraseFD, identity, identityFD

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
        default: return nil
        }
    }

    /// Sets this option of `settings` to `value`, as the argument parser would accept it: false
    /// when it was given already or `value` is not one the parser takes (the parser words the error).
    func assign(_ value: String, to settings: inout Settings) -> Bool {
        switch self {
        case .service:
            guard settings.service == nil, !value.hasPrefix("-") else { return false }
            settings.service = value
        case .timeout:
            guard settings.timeout == nil, let seconds = Double(value), Settings.isValidTimeout(seconds) else {
                return false
            }
            settings.timeout = seconds
        case .backend:
            guard settings.backend == nil, let backend = Backend(rawValue: value) else { return false }
            settings.backend = backend
        case .vault, .passphraseFile, .identity:
            guard !value.isEmpty, !value.hasPrefix("-") else { return false }
            return assignPath(value, to: &settings)
        case .passphraseFD, .identityFD:
            guard let fd = Int32(value), fd >= 0 else { return false }
            if self == .passphraseFD, settings.passphraseFD == nil {
                settings.passphraseFD = fd
            } else if self == .identityFD, settings.identityFD == nil {
                settings.identityFD = fd
            } else {
                return false
            }
        }
        return true
    }

    private func assignPath(_ value: String, to settings: inout Settings) -> Bool {
        switch self {
        case .vault where settings.vault == nil: settings.vault = value
        case .passphraseFile where settings.passphraseFile == nil: settings.passphraseFile = value
        case .identity where settings.identity == nil: settings.identity = value
        default: return false  // given twice
        }
        return true
    }
}
