import KeychainCore

/// What to do next after a library error, in this tool's words (its options, commands and
/// variables): the one place for hints, beside the exit-code map (Failure.swift). The library's
/// own description says what happened; a message is that, then the hint.
func hint(for error: KeychainError) -> String? {
    switch error {
    case .notFound(let service, _):
        if misplacedSecretKind(service) != nil { return "Check the service name (-s, $KEYCHAIN_SERVICE)" }
        return "Check the name with 'keychain-cli -s \(shellQuoted(escapedForDisplay(service))) list'"
    case .invalidName(let kind, let reason):
        if kind == "revision" || kind == "version" { return "'keychain-cli history KEY' lists its versions" }
        if reason.contains("tree vault") { return nil }  // the reason says what to do
        return "Use a non-empty name without NUL, of at most \(maximumNameLength) bytes"
    case .emptySecret:
        return "Is the variable you piped unset? Pass --allow-empty if an empty secret is really meant"
    case .secretTooLarge:
        return "Store a path to a file instead, or split it"
    case .notOneTimePassword(let key, let reason) where reason.contains("get --field otp"):
        return
            "Add the service's TOTP seed to the entry as an otpauth://totp/ line, or use the app that computes that code: keychain-cli get "
            + shellQuoted(escapedForDisplay(key)) + " --field otp"
    case .notOneTimePassword(let key, _):
        return "Store the otpauth://totp/ URI or base32 seed the service gave: keychain-cli set "
            + shellQuoted(escapedForDisplay(key))
    case .notText:
        return "Read it with get --raw"
    case .invalidData:
        return nil
    case .noSessionBus:
        // The wait: the daemon answers before it owns its name, and a call meanwhile would
        // activate a second one (docs/ci.md).
        return "Run inside a desktop session, or headless: dbus-run-session -- sh -c 'printf %s \"$PW\" | "
            + "gnome-keyring-daemon --unlock --components=secrets >/dev/null; until dbus-send --session "
            + "--print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner "
            + "string:org.freedesktop.secrets | grep -q true; do sleep 0.05; done; keychain-cli ...'"
    case .noSecretService:
        return "Install and start gnome-keyring, KeePassXC (its Secret Service integration on) or KWallet; headless: "
            + "keychain-cli --backend vault serve -- COMMAND, or printf %s \"$PW\" | gnome-keyring-daemon --unlock "
            + "--components=secrets"
    case .noDefaultCollection:
        return "Create one with your keyring manager (seahorse), or start gnome-keyring-daemon with --unlock "
            + "to create 'login'"
    case .locked:
        return "Unlock it (log in to the desktop; open the wallet in KWallet, unlock the database in KeePassXC; "
            + "gnome-keyring headless: printf %s \"$PW\" | gnome-keyring-daemon --replace --unlock) and try again"
    case .permissionDenied:
        return "Check that this user may use the keyring"
    case .timedOut:
        return "An unanswered unlock prompt? Unlock the keyring first, or raise --timeout"
    case .backendFailure:
        return "Try again with a fresh session; if it happens again, please report it as a bug"
    case .noHistory:
        return "A tree vault committed in git (vault init, git init) and OpenBao's KV version 2 keep versions"
    case .vaultIO:
        return "Check the vault's path (--vault, $KEYCHAIN_VAULT) and its permissions"
    case .vaultCorrupt:
        return "Restore it from a backup, or move it away to start a new vault"
    case .itemCorrupt(let path, _):
        return
            "Restore that file (git checkout -- \(shellQuoted(path)), or a backup), or remove it and store the item again"
    case .wrongPassphrase:
        return "Check $KEYCHAIN_PASSPHRASE, --passphrase-file or --passphrase-fd"
    case .noPassphrase:
        return "Give the passphrase (not empty) in $KEYCHAIN_PASSPHRASE, with --passphrase-file PATH or "
            + "--passphrase-fd N, or run at a terminal to be asked (or to run 'keychain-cli unlock' once)"
    case .noNewPassphrase:
        return "Give the new passphrase (not empty) in $KEYCHAIN_NEW_PASSPHRASE, with --new-passphrase-file PATH "
            + "or --new-passphrase-fd N, or run at a terminal to be asked"
    case .noMatchingIdentity(_, let detail) where detail.hasPrefix("the identity key of "):
        return nil  // an ssh key's passphrase: the detail says what to do
    case .noMatchingIdentity:
        return "Give the identity file of one of its recipients with --identity PATH or $KEYCHAIN_IDENTITY (an "
            + "age identity file, or an OpenSSH ed25519 or RSA key)"
    case .vaultRekeyed:
        return "Start again with the new passphrase or identity (vault passwd or vault recipients changed it)"
    case .vaultBusy:
        return "Try again, or raise --timeout"
    case .lastRecipient:
        return "To lock it with a passphrase instead, run 'keychain-cli vault passwd'"
    case .holderNotOurs:
        return "Remove it and run 'keychain-cli unlock' again"
    case .notSigned:
        return "Have an allowed signer review the change (keychain-cli vault diff, git log -p) and sign it "
            + "(keychain-cli vault sign); check --allowed-signers or $KEYCHAIN_ALLOWED_SIGNERS"
    case .cannotSign:
        return "Give an OpenSSH ed25519 key with --signing-key PATH or $KEYCHAIN_SIGNING_KEY (a .pub file: the key "
            + "held by the ssh-agent at $SSH_AUTH_SOCK)"
    case .openBao(let problem):
        return hint(for: problem)
    case .holderTimedOut:
        return
            "Is it stopped (kill -STOP)? Continue it (kill -CONT), or end it (its keys go with it) and unlock again; "
            + "or raise --timeout"
    case .serverTimedOut:
        return "Check the server (bao status), or raise --timeout"
    case .nameTaken(_, _, .owned):
        return "Stop it first, or pass --replace to take the name over"
    case .nameTaken(_, _, .replacementRefused):
        return "Stop it first"
    case .nameTaken(_, _, .takenOver):
        return nil
    case .agePlugin(_, .timedOut, _):
        return "Is it waiting for a touch or a device? Raise --timeout"
    case .agePlugin(_, .needsTerminal, _):
        return "Run it at a terminal, or use an identity that asks nothing"
    case .agePlugin(_, .notInPath, _), .agePlugin(_, .failed, _):
        // The detail says what to install, or what the plugin said.
        return nil
    case .insecureFile, .badConfiguration, .serverUnavailable, .serverDenied:
        // Their details name the file or setting and the fix (a chmod, a variable to set).
        return nil
    }
}

/// What to do next about the OpenBao backend's settings, login or mount: the variables to set.
func hint(for problem: OpenBaoProblem) -> String {
    switch problem {
    case .settingFileHoldsSecret(let setting, _):
        let variable = openBaoVariable(setting)
        return "Set \(variable)_FILE to the path of a file, or the value itself in \(variable)"
    case .settingFileMissing(let setting, _):
        return "Fix the path in \(openBaoVariable(setting))_FILE"
    case .halfAnAppRole:
        return "Set KEYCHAIN_OPENBAO_ROLE_ID and KEYCHAIN_OPENBAO_SECRET_ID (or their _FILE variants)"
    case .mountNotAPath:
        return "Set KEYCHAIN_OPENBAO_MOUNT to the KV version 2 mount, e.g. secret"
    case .noToken:
        return "Set BAO_TOKEN (or VAULT_TOKEN), log in with 'bao login' (which writes ~/.vault-token), or for "
            + "AppRole set KEYCHAIN_OPENBAO_ROLE_ID and KEYCHAIN_OPENBAO_SECRET_ID, for a CI job's identity token "
            + "KEYCHAIN_OPENBAO_JWT (or their _FILE variants)"
    case .loginRefused(.appRole, _, _, _):
        return "Check KEYCHAIN_OPENBAO_ROLE_ID and KEYCHAIN_OPENBAO_SECRET_ID (a secret id may have expired or been "
            + "used up), and KEYCHAIN_OPENBAO_APPROLE_MOUNT"
    case .loginRefused(.jwt, _, _, _):
        return "Check KEYCHAIN_OPENBAO_JWT (it may have expired, or its audience, issuer or subject may not match "
            + "the role's bounds), KEYCHAIN_OPENBAO_JWT_ROLE and KEYCHAIN_OPENBAO_JWT_MOUNT"
    case .notKVVersion2(let mount, _, _):
        return "Set KEYCHAIN_OPENBAO_MOUNT to a KV version 2 mount, or upgrade this one (bao kv enable-versioning "
            + "\(escapedForDisplay(mount)))"
    case .noMount(let mount, _):
        return "Check KEYCHAIN_OPENBAO_MOUNT (bao secrets list), or enable it: bao secrets enable "
            + "-path=\(escapedForDisplay(mount)) kv-v2"
    case .answerNotKVVersion2(_, let mount):
        return "Check that '\(escapedForDisplay(mount))' is a KV version 2 mount (bao secrets list -detailed), or "
            + "set KEYCHAIN_OPENBAO_MOUNT"
    }
}

/// The variable that gives `setting` (its file's path in the same name with _FILE).
private func openBaoVariable(_ setting: OpenBaoSetting) -> String {
    switch setting {
    case .roleID: "KEYCHAIN_OPENBAO_ROLE_ID"
    case .secretID: "KEYCHAIN_OPENBAO_SECRET_ID"
    case .jwt: "KEYCHAIN_OPENBAO_JWT"
    }
}

/// `error`'s description and its hint, as one line: `<what happened>. <what to do next>`.
func describedWithHint(_ error: KeychainError) -> String {
    guard let hint = hint(for: error) else { return error.description }
    return "\(error.description). \(hint)"
}

/// A format's mistake and, where this tool has more to say, what to do next.
func describedWithHint(_ error: FormatError) -> String {
    switch error.kind {
    case .valueInMapping:
        return "\(error.description). To store such a file's values: keychain-cli -s SERVICE import FILE"
    case .ownExportAsOther: return "\(error.description). Import it without --format"
    case .wrongPassword, .other: return error.description
    }
}

/// A recipient's mistake and what to do next: where a recipient comes from, in this tool's words.
func describedWithHint(_ error: RecipientError) -> String {
    switch error.kind {
    case .invalidAgeRecipient:
        return "\(error.description). Copy it again from age-keygen's or keychain-cli vault keygen's output"
    case .unsupportedKeyType:
        return "\(error.description) (keychain-cli vault keygen makes one)"
    case .other:
        return error.description
    }
}
