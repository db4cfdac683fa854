import KeychainSystem

/// Everything that can go wrong in KeychainCore, collapsed into the cases a caller acts on.
///
/// Each case's ``description`` says what happened and to which item or file, in the words of
/// this library, and never contains a secret; what to do next is the caller's to say (the
/// command-line tool adds a hint and maps every case to one exit code: docs/exit-codes.md).
public enum KeychainError: Error, Equatable, Sendable, CustomStringConvertible, Codable {
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
    /// The backend keeps no earlier versions here (`history`, `rollback`); `detail` says why.
    case noHistory(detail: String)
    /// The vault file or its directory cannot be read, created or written; `detail` names the path.
    case vaultIO(detail: String)
    /// A file or directory that holds or guards secrets (the vault, its directory, an identity
    /// file) is not private to this user; `detail` names it and the command that fixes it.
    case insecureFile(detail: String)
    /// The vault file is not a vault this version can read: not age, truncated, altered, or an
    /// unknown document. It is left untouched.
    case vaultCorrupt(path: String, reason: String)
    /// One item's file of a tree vault is not an item of it (damaged, moved, a link, too large);
    /// the other items read as before, and the file is never written over.
    case itemCorrupt(path: String, reason: String)
    /// The passphrase does not open the vault.
    case wrongPassphrase(path: String)
    /// The vault needs a passphrase and none could be had (no source set, no terminal, empty).
    case noPassphrase(detail: String)
    /// Re-keying the vault to a new passphrase needs that passphrase, and none could be had.
    case noNewPassphrase(detail: String)
    /// The vault is encrypted to age recipients and no identity given opens it (or none was given).
    case noMatchingIdentity(path: String, detail: String)
    /// Another process held the vault's write lock for `seconds`.
    case vaultBusy(path: String, seconds: Double)
    /// Another process re-keyed a vault this store had opened (`vault passwd`, `vault recipients`),
    /// and the passphrase or identity that opened it no longer does (a `watch`, a long-lived store).
    case vaultRekeyed(path: String)
    /// `unlock`'s holder did not answer in time (stopped, or starved).
    case holderTimedOut(socket: String, seconds: Double)
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
    /// The secret under `key` is not UTF-8 text, and text was asked for.
    case notText(key: String)
    /// The secret under `key` is not a one-time password's seed (a TOTP otpauth:// URI or a
    /// base32 seed); `reason` says why, never repeating it.
    case notOneTimePassword(key: String, reason: String)
    /// Removing recipients from the team vault at `path` would leave it with none; it is unchanged.
    case lastRecipient(path: String)
    /// The holder's socket is served by another user (`uid`), not by this one; nothing was sent.
    case holderNotOurs(socket: String, uid: UInt32)
    /// A signed vault's file (`what`: an item's SERVICE/KEY, its recipients, the vault) is not
    /// signed by an allowed signer; `reason` says how. Nothing it holds was used.
    case notSigned(what: String, path: String, reason: String)
    /// The key that signs a vault's writes cannot sign (`detail` says why); nothing was written.
    case cannotSign(detail: String)
    /// The OpenBao backend's settings, its login or its mount cannot work.
    case openBao(OpenBaoProblem)
    /// Another process owns the bus name a provider must own (`org.freedesktop.secrets`), did not
    /// let it be replaced, or took it over.
    case nameTaken(name: String, owner: String, conflict: NameConflict)
    /// An age plugin (`age-plugin-NAME`, for a vault's plugin recipient or identity) is missing,
    /// failed, did not answer in time, or needed a terminal; `detail` says which, in its words.
    case agePlugin(plugin: String, problem: AgePluginProblem, detail: String)

    public var description: String {
        switch self {
        case .notFound(let service, let key):
            return
                "no secret named \(quotedValue(key, expected: "a key name")) in service \(quotedValue(service, expected: "a service name"))"
        case .invalidName(let kind, let reason):
            return "invalid \(kind): \(reason)"
        case .emptySecret:
            return "refusing to store an empty secret"
        case .secretTooLarge(let limit):
            return "the secret is larger than the limit of \(limit) bytes; nothing was stored"
        case .invalidData(let key, let reason):
            return "the secret \(quotedValue(key, expected: "a key name")) \(reason)"
        case .noSessionBus(let detail):
            return "no D-Bus session bus (\(detail))"
        case .noSecretService(let detail):
            return "no Secret Service provider on the session bus (\(detail))"
        case .noDefaultCollection(let detail):
            return "the Secret Service has no default keyring (\(detail))"
        case .locked(let detail):
            return "the keyring is locked (\(detail))"
        case .permissionDenied(let detail):
            return "permission denied by the Secret Service (\(detail))"
        case .timedOut(let operation, let seconds):
            return "timed out after \(formatSeconds(seconds)) s waiting for the Secret Service to \(operation)"
        case .backendFailure(let detail), .noHistory(let detail), .vaultIO(let detail), .insecureFile(let detail),
            .badConfiguration(let detail), .serverUnavailable(let detail), .serverDenied(let detail):
            return detail
        case .itemCorrupt(let path, let reason):
            return "cannot open the item \(quotedPath(path)): \(reason). The file was left untouched"
        case .vaultCorrupt(let path, let reason):
            return "cannot open the vault \(quotedPath(path)): \(reason). The file was left untouched"
        case .wrongPassphrase(let path):
            return "wrong passphrase for the vault \(quotedPath(path)) (or its header was altered)"
        case .noPassphrase(let detail):
            return "the vault needs a passphrase (\(detail))"
        case .noNewPassphrase(let detail):
            return "re-keying the vault needs a new passphrase (\(detail))"
        case .noMatchingIdentity(let path, let detail):
            return "cannot open the vault \(quotedPath(path)): \(detail)"
        case .vaultRekeyed(let path):
            return "the vault \(quotedPath(path)) was re-keyed by another process since this one opened it: the "
                + "passphrase or identity that opened it no longer does"
        case .vaultBusy(let path, let seconds):
            return "another process kept the vault \(quotedPath(path)) locked for \(formatSeconds(seconds)) s"
        case .holderTimedOut(let socket, let seconds):
            return "the holder at \(quotedPath(socket)) did not answer within \(formatSeconds(seconds)) s"
        case .serverTimedOut(let address, let seconds, let detail):
            return "OpenBao at \(address) did not answer within \(formatSeconds(seconds)) s (\(detail))"
        case .notText(let key):
            return "the secret \(quotedValue(key, expected: "a key name")) is not UTF-8 text"
        case .notOneTimePassword(let key, let reason):
            return "the secret \(quotedValue(key, expected: "a key name")) \(reason)"
        case .lastRecipient(let path):
            return "a team vault needs at least one recipient; \(quotedPath(path)) was left as it was"
        case .holderNotOurs(let socket, let uid):
            return "the holder's socket \(quotedPath(socket)) is served by uid \(uid), not by you"
        case .openBao(let problem):
            return problem.description
        case .notSigned(let what, let path, let reason):
            return "refusing \(what) (\(quotedPath(path))): \(reason); nothing it holds was used"
        case .cannotSign(let detail):
            return "cannot sign the vault's writes: \(detail); nothing was written"
        case .nameTaken(let name, let owner, .owned):
            return "\(name) is already owned by \(escapedForDisplay(owner)) on this bus"
        case .nameTaken(let name, let owner, .replacementRefused):
            return "\(name) is owned by \(escapedForDisplay(owner)), which does not let another process replace it"
        case .nameTaken(let name, let owner, .takenOver):
            return "\(name) was taken over by \(escapedForDisplay(owner))"
        case .agePlugin(_, _, let detail):
            return detail
        }
    }
}

/// How a bus name a provider needs is taken (``KeychainError/nameTaken(name:owner:conflict:)``).
public enum NameConflict: Sendable, Equatable, Codable {
    /// Another process owns it.
    case owned
    /// Another process owns it and refused to let it be replaced.
    case replacementRefused
    /// Another process took it over while we served.
    case takenOver
}

/// What went wrong with an age plugin (``KeychainError/agePlugin(plugin:problem:detail:)``).
public enum AgePluginProblem: Sendable, Equatable, Codable {
    /// No `age-plugin-NAME` in PATH.
    case notInPath
    /// It sent an error, exited early, or broke the protocol.
    case failed
    /// It did not answer within the timeout, and was ended.
    case timedOut
    /// It asked a question, and there is no terminal to ask it on.
    case needsTerminal
}
