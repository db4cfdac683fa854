/// Everything that can go wrong in KeychainCore, collapsed into the cases a caller acts on.
///
/// Each case's ``description`` says what happened and what to do next, and never contains
/// a secret. The command-line tool maps every case to one exit code (see the README).
public enum KeychainError: Error, Equatable, Sendable, CustomStringConvertible {
    /// How a ``noPassphrase(detail:)`` about the new passphrase of `vault passwd` begins.
    public static let newPassphrase = "the new passphrase: "

    /// No item is stored under this service and key.
    case notFound(service: String, key: String)
    /// A key or service name that cannot address an item (empty, a NUL character, too long).
    case invalidName(kind: String, reason: String)
    /// The secret is empty and the caller did not allow empty secrets.
    case emptySecret
    /// The secret is larger than `limit` bytes (``Keychain/maximumSecretSize``).
    case secretTooLarge(limit: Int)
    /// The stored bytes are not what the caller asked for (not UTF-8 text, undecodable JSON).
    case invalidData(key: String, reason: String)
    /// No D-Bus session bus could be reached.
    case noSessionBus(detail: String)
    /// The session bus has no Secret Service provider (nothing owns `org.freedesktop.secrets`).
    case noSecretService(detail: String)
    /// The Secret Service has no default (login) collection to store items in.
    case noDefaultCollection(detail: String)
    /// The collection holding the item is locked and could not be unlocked (no prompter, or the
    /// prompt was dismissed).
    case locked(detail: String)
    /// The backend refused access.
    case permissionDenied(detail: String)
    /// The backend did not answer within the time limit.
    case timedOut(operation: String, seconds: Double)
    /// The backend failed in a way none of the other cases describe.
    case backendFailure(detail: String)
    /// The vault file or its directory cannot be read, created or written; `detail` names the path.
    case vaultIO(detail: String)
    /// A file or directory that holds or guards secrets (the vault, its directory, an identity
    /// file) is not private to this user; `detail` names it and the command that fixes it.
    case insecureFile(detail: String)
    /// The vault file is not a vault this version can read: not age, truncated, altered, or an
    /// unknown document. It is left untouched.
    case vaultCorrupt(path: String, reason: String)
    /// The passphrase does not open the vault.
    case wrongPassphrase(path: String)
    /// The vault needs a passphrase and none could be had (no source set, no terminal, empty).
    /// A detail that starts with ``newPassphrase`` is about `vault passwd`'s new one.
    case noPassphrase(detail: String)
    /// The vault is encrypted to age recipients and no identity given opens it (or none was given).
    case noMatchingIdentity(path: String, detail: String)
    /// Another process held the vault's write lock for `seconds`.
    case vaultBusy(path: String, seconds: Double)
    /// Another process re-keyed a vault this store had opened (`vault passwd`, `vault recipients`),
    /// and the passphrase or identity that opened it no longer does (a `watch`, a long-lived store).
    case vaultRekeyed(path: String)
    /// The backend's settings cannot work (an OpenBao address that is not a URL, or plain http to
    /// another machine); `detail` says which setting and how to fix it.
    case badConfiguration(detail: String)
    /// The OpenBao server cannot be reached or cannot serve (refused, no such host, TLS, sealed,
    /// a server error); `detail` says which and what to do.
    case serverUnavailable(detail: String)
    /// The OpenBao server refused: no token, a bad or expired token, or a policy without the
    /// capability; `detail` names the path.
    case serverDenied(detail: String)
    /// The OpenBao server did not answer usefully within `seconds` (silent, or still electing a leader).
    case serverTimedOut(address: String, seconds: Double, detail: String)

    public var description: String {
        switch self {
        case .notFound(let service, let key):
            return "no secret named '\(escapedForDisplay(key))' in service '\(escapedForDisplay(service))'. "
                + "Check the name with 'keychain-cli -s \(shellQuoted(escapedForDisplay(service))) list'"
        case .invalidName(let kind, let reason):
            return "invalid \(kind): \(reason). Use a non-empty name without NUL, of at most \(maximumNameLength) bytes"
        case .emptySecret:
            return "refusing to store an empty secret (is the variable you piped unset?). "
                + "Pass --allow-empty if an empty secret is really meant"
        case .secretTooLarge(let limit):
            return "the secret is larger than the limit of \(limit) bytes; nothing was stored. "
                + "Store a path to a file instead, or split it"
        case .invalidData(let key, let reason):
            return "the secret '\(escapedForDisplay(key))' \(reason)"
        case .noSessionBus(let detail):
            return "no D-Bus session bus (\(detail)). Run inside a desktop session, or headless: "
                + "dbus-run-session -- sh -c 'printf %s \"$PW\" | gnome-keyring-daemon --unlock "
                + "--components=secrets >/dev/null; keychain-cli ...'"
        case .noSecretService(let detail):
            return "no Secret Service provider on the session bus (\(detail)). Install and start "
                + "gnome-keyring, KeePassXC (with Secret Service integration) or KWallet; headless: "
                + "printf %s \"$PW\" | gnome-keyring-daemon --unlock --components=secrets"
        case .noDefaultCollection(let detail):
            return "the Secret Service has no default keyring (\(detail)). Create one with your "
                + "keyring manager (seahorse), or start gnome-keyring-daemon with --unlock to create 'login'"
        case .locked(let detail):
            return "the keyring is locked (\(detail)). Unlock it (log in to the desktop, or "
                + "printf %s \"$PW\" | gnome-keyring-daemon --replace --unlock) and try again"
        case .permissionDenied(let detail):
            return "permission denied by the Secret Service (\(detail)). Check that this user may use the keyring"
        case .timedOut(let operation, let seconds):
            return "timed out after \(formatSeconds(seconds)) s waiting for the Secret Service to \(operation) "
                + "(an unanswered unlock prompt?). Unlock the keyring first, or raise --timeout"
        case .backendFailure(let detail):
            return "the Secret Service failed: \(detail). Run with a fresh session or report a bug"
        case .vaultIO(let detail):
            return "\(detail). Check the vault's path (--vault, $KEYCHAIN_VAULT) and its permissions"
        case .insecureFile(let detail):
            return detail
        case .vaultCorrupt(let path, let reason):
            return "cannot open the vault \(quotedPath(path)): \(reason). The file was left untouched; restore it "
                + "from a backup, or move it away to start a new vault"
        case .wrongPassphrase(let path):
            return "wrong passphrase for the vault \(quotedPath(path)) (or its header was altered). Check "
                + "$KEYCHAIN_PASSPHRASE, --passphrase-file or --passphrase-fd"
        case .noPassphrase(let detail) where detail.hasPrefix(Self.newPassphrase):
            return "vault passwd needs a new passphrase (\(detail.dropFirst(Self.newPassphrase.count))). Set "
                + "$KEYCHAIN_NEW_PASSPHRASE, or pass --new-passphrase-file PATH or --new-passphrase-fd N, or run at a "
                + "terminal to be asked"
        case .noPassphrase(let detail):
            return "the vault needs a passphrase (\(detail)). Set $KEYCHAIN_PASSPHRASE, or pass "
                + "--passphrase-file PATH or --passphrase-fd N, or run at a terminal to be asked"
        case .noMatchingIdentity(let path, let detail):
            return
                "cannot open the vault \(quotedPath(path)): \(detail). Give the identity file of one of its recipients "
                + "with --identity PATH or $KEYCHAIN_IDENTITY (an age identity file, or an unencrypted OpenSSH ed25519 key)"
        case .vaultRekeyed(let path):
            return
                "the vault \(quotedPath(path)) was re-keyed by another process since this one opened it (vault passwd "
                + "or vault recipients): the passphrase or identity that opened it no longer does. Start again with "
                + "the new one"
        case .vaultBusy(let path, let seconds):
            return "another process kept the vault \(quotedPath(path)) locked for \(formatSeconds(seconds)) s. "
                + "Try again, or raise --timeout"
        case .badConfiguration(let detail):
            return detail
        case .serverUnavailable(let detail):
            return detail
        case .serverDenied(let detail):
            return detail
        case .serverTimedOut(let address, let seconds, let detail):
            return "OpenBao at \(address) did not answer within \(formatSeconds(seconds)) s (\(detail)). "
                + "Check the server (bao status), or raise --timeout"
        }
    }
}

func shellQuoted(_ s: String) -> String {
    let safe = s.unicodeScalars.allSatisfy {
        ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
            || "-_./:@%+=".unicodeScalars.contains($0)
    }
    if safe && !s.isEmpty { return s }
    return "'" + s.replacing("'", with: "'\\''") + "'"
}

func formatSeconds(_ seconds: Double) -> String {
    seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
}
