import ArgumentParser
import Glibc
import KeychainCore

/// Options every command takes, before or after its name (`-s ci list` and `list -s ci`).
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .global(.service),
        help: ArgumentHelp(
            "The service (namespace) of the keys. Default: $KEYCHAIN_SERVICE, else \"keychain-cli\".",
            valueName: "name"))
    var service: String?

    // Unconditional: "--timeout -1" is a bad number, not a missing value followed by an option.
    @Option(
        name: .global(.timeout), parsing: .unconditional,
        help: ArgumentHelp(
            "Give up when the keyring (or an unlock prompt, or a vault's age plugin) has not answered for this "
                + "many seconds, or when an OpenBao operation (retries included) has not finished. Default: "
                + "$KEYCHAIN_TIMEOUT, else 5.",
            valueName: "seconds"))
    var timeout: Double?

    @Option(
        name: .global(.backend),
        help: ArgumentHelp(
            "Where secrets are kept: secret-service (the desktop keyring), vault (an encrypted file, "
                + "for CI and servers) or openbao (a KV version 2 mount of an OpenBao or HashiCorp Vault "
                + "server, set up by $BAO_ADDR and $BAO_TOKEN as for the bao CLI). "
                + "Default: $KEYCHAIN_BACKEND, else vault when a vault option (--vault, --passphrase-*, "
                + "--identity*) is given, else secret-service.",
            valueName: "backend"))
    var backend: Backend?

    @Option(
        name: .global(.vault),
        help: ArgumentHelp(
            "The vault file, or a tree vault's directory (vault init). Default: $KEYCHAIN_VAULT, else "
                + "$XDG_DATA_HOME/keychain-cli/vault.age (~/.local/share/keychain-cli/vault.age).",
            valueName: "path"), completion: .file())
    var vault: String?

    @Option(
        name: .global(.passphraseFile),
        help: ArgumentHelp(
            "Read the vault's passphrase from this file (one trailing newline is ignored). "
                + "Default: $KEYCHAIN_PASSPHRASE, else a prompt on the terminal.",
            valueName: "path"), completion: .file())
    var passphraseFile: String?

    @Option(
        name: .global(.passphraseFD), parsing: .unconditional,
        help: ArgumentHelp(
            "Read the vault's passphrase from this open file descriptor, to its end (one trailing "
                + "newline is ignored).",
            valueName: "n"))
    var passphraseFD: Int32?

    @Option(
        name: .global(.identity),
        help: ArgumentHelp(
            "An age identity file (AGE-SECRET-KEY-1… lines, as age-keygen writes, and AGE-PLUGIN-NAME-1… "
                + "lines, used by age-plugin-NAME from PATH) or an OpenSSH ed25519 or RSA private key, that opens "
                + "a team vault (a passphrase-protected key's passphrase from $KEYCHAIN_KEY_PASSPHRASE, else asked "
                + "on the terminal). Default: $KEYCHAIN_IDENTITY.",
            valueName: "path"), completion: .file())
    var identity: String?

    @Option(
        name: .global(.identityFD), parsing: .unconditional,
        help: ArgumentHelp(
            "Read the age identity file from this open file descriptor, to its end (a CI secret held "
                + "in memory). Default: $KEYCHAIN_IDENTITY_FD.",
            valueName: "n"))
    var identityFD: Int32?

    @Option(
        name: .global(.signingKey),
        help: ArgumentHelp(
            "Sign every write to the vault with this OpenSSH ed25519 private key (its passphrase asked on the "
                + "terminal), or with the key an ssh-agent ($SSH_AUTH_SOCK) holds when this is its .pub file. "
                + "Default: $KEYCHAIN_SIGNING_KEY.",
            valueName: "path"), completion: .file())
    var signingKey: String?

    @Option(
        name: .global(.allowedSigners),
        help: ArgumentHelp(
            "The OpenSSH allowed_signers file of who may sign the vault (kept where the vault's writers "
                + "cannot change it unreviewed). Default: $KEYCHAIN_ALLOWED_SIGNERS, checked against "
                + "$KEYCHAIN_ALLOWED_SIGNERS_SHA256 when that is set.",
            valueName: "path"), completion: .file())
    var allowedSigners: String?

    @Flag(
        name: .customLong("require-signed"),
        help: ArgumentHelp(
            "Use nothing from the vault that an allowed signer did not sign: every read verifies first, "
                + "and a write verifies the recipients it encrypts to (exit 77). Default: "
                + "$KEYCHAIN_REQUIRE_SIGNED=1."))
    var requireSigned = false

    func validate() throws {
        let given = Settings(
            service: service, timeout: timeout, backend: backend, vault: vault, passphraseFile: passphraseFile,
            passphraseFD: passphraseFD, identity: identity, identityFD: identityFD, signingKey: signingKey,
            allowedSigners: allowedSigners, requireSigned: requireSigned)
        if let misuse = given.misuse { throw ValidationError(misuse) }
    }

    /// These options, with those not given here taken from `outer` (given before the command name).
    func over(_ outer: GlobalOptions) -> Settings {
        Settings(
            service: service ?? outer.service, timeout: timeout ?? outer.timeout, backend: backend ?? outer.backend,
            vault: vault ?? outer.vault, passphraseFile: passphraseFile ?? outer.passphraseFile,
            passphraseFD: passphraseFD ?? outer.passphraseFD, identity: identity ?? outer.identity,
            identityFD: identityFD ?? outer.identityFD, signingKey: signingKey ?? outer.signingKey,
            allowedSigners: allowedSigners ?? outer.allowedSigners, requireSigned: requireSigned || outer.requireSigned)
    }
}

extension Backend: ExpressibleByArgument {}

extension NameSpecification {
    /// The names of `option` in the table of global options.
    static func global(_ option: GlobalOption) -> NameSpecification {
        let long = NameSpecification.Element.customLong(String(option.long.dropFirst(2)))
        return option.short.map { [.customShort($0.last!), long] } ?? [long]
    }
}
