import ArgumentParser
import Glibc
import KeychainCore

/// The options and variables that name a file, and where their content can be given instead
/// (the hint of a refusal): a key or passphrase given itself where its file's path belongs is
/// refused with a usage error that never repeats it (see ``misplacedSecretKind(_:)``).
enum PathValue {
    static let hints: [String: String] = [
        "--identity": "or the key itself on a descriptor: --identity-fd 3 3<<<\"$KEY\"",
        "$KEYCHAIN_IDENTITY": "or the key itself on a descriptor: KEYCHAIN_IDENTITY_FD=3 keychain-cli … 3<<<\"$KEY\"",
        "--passphrase-file": "or the passphrase itself in $KEYCHAIN_PASSPHRASE or on --passphrase-fd",
        "--new-passphrase-file": "or the passphrase itself in $KEYCHAIN_NEW_PASSPHRASE or on --new-passphrase-fd",
        "--source-passphrase-file": "or the password itself on --source-passphrase-fd",
        "--source-key-file": "", "--access-log": "", "--allow-exe": "",
        "--vault": "", "$KEYCHAIN_VAULT": "",
        "--signing-key": "or the key in an ssh-agent, naming its .pub file", "$KEYCHAIN_SIGNING_KEY": "",
        "--allowed-signers": "", "$KEYCHAIN_ALLOWED_SIGNERS": "",
    ]

    /// Refuses `value` of `name` (an option or `$VARIABLE`) when it looks like a secret rather
    /// than a path and no such file exists.
    /// - Throws: ``CommandFailure`` (usage) naming `name` and what the value looks like, not the value.
    static func check(_ value: String?, of name: String) throws {
        guard let value, let kind = misplacedSecretKind(value), access(value, F_OK) != 0 else { return }
        throw CommandFailure.usage(refusal(of: name, kind: kind))
    }

    /// The message that refuses the value of `name`, which looks like `kind`.
    static func refusal(of name: String, kind: String) -> String {
        let hint = hints[name].map { $0.isEmpty ? "" : ", \($0)" } ?? ""
        return "\(name) holds \(kind), not a path; it is not repeated here. Give the path of a file\(hint)"
    }
}

extension PathValue {
    /// ``check(_:of:)`` for each vault option that names a file, and the variables they fall back to.
    static func check(_ settings: Settings) throws {
        try check(settings.vault, of: "--vault")
        if settings.vault == nil { try check(try environment("KEYCHAIN_VAULT"), of: "$KEYCHAIN_VAULT") }
        try check(settings.passphraseFile, of: "--passphrase-file")
        try check(settings.identity, of: "--identity")
        if settings.identity == nil && settings.identityFD == nil, try environment("KEYCHAIN_IDENTITY_FD") == nil {
            try check(try environment("KEYCHAIN_IDENTITY"), of: "$KEYCHAIN_IDENTITY")
        }
        try check(settings.signingKey, of: "--signing-key")
        if settings.signingKey == nil {
            try check(try environment("KEYCHAIN_SIGNING_KEY"), of: "$KEYCHAIN_SIGNING_KEY")
        }
        try check(settings.allowedSigners, of: "--allowed-signers")
        if settings.allowedSigners == nil {
            try check(try environment("KEYCHAIN_ALLOWED_SIGNERS"), of: "$KEYCHAIN_ALLOWED_SIGNERS")
        }
    }
}
