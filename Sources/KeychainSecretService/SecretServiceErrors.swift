internal import CLibSecret
import KeychainDBus
import KeychainStore
import KeychainSystem

// What the Secret Service's and libsecret's errors mean to a caller: one KeychainError case each
// (the answers gnome-keyring, KeePassXC and kwalletd5 give, as the integration tests meet them;
// docs/exit-codes.md says what each case means to a user), and an item that vanished under us,
// which is no error.

extension KeychainError {
    /// The case a libsecret/GDBus error stands for.
    init(_ error: GLibError, operation: String, seconds: Double, expired: Bool) {
        let remoteName = error.remoteName
        // The service's own words, or GLib's: shown in one line, their control characters escaped.
        let detail = escapedForDisplay(GDBusCalls.strippingRemotePrefix(error.message))

        if error.isIOError(G_IO_ERROR_CANCELLED) {
            self =
                expired
                ? .timedOut(operation: operation, seconds: seconds)
                : .backendFailure(detail: "the Secret Service call was cancelled")
            return
        }
        if error.domain == keychain_cli_secret_error_quark() {
            switch error.code {
            case Int32(SECRET_ERROR_IS_LOCKED.rawValue): self = .locked(detail: detail)
            case Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue): self = .noDefaultCollection(detail: detail)
            default: self = .backendFailure(detail: "the Secret Service failed: \(detail)")
            }
            return
        }
        if let remoteName {
            self = Self(remote: remoteName, detail: detail, operation: operation, seconds: seconds)
        } else {
            // Errors that never reached a remote peer come from connecting to the bus itself.
            self =
                error.domain == keychain_cli_io_error_quark()
                ? .noSessionBus(detail: detail) : .backendFailure(detail: "the Secret Service failed: \(detail)")
        }
    }

    /// What a failure of the D-Bus layer means to the Secret Service client: the one map from
    /// ``DBusError`` to a case.
    init(_ error: DBusError) {
        switch error {
        case .refused: self = .noSessionBus(detail: "the session bus refused the authentication")
        case .closed: self = .noSessionBus(detail: "the session bus closed the connection")
        case .malformed: self = .backendFailure(detail: "the session bus sent a malformed D-Bus message")
        case .timedOut(let operation, let seconds): self = .timedOut(operation: operation, seconds: seconds)
        case .glib(let failure, let expired, let operation, let seconds):
            self.init(failure, operation: operation, seconds: seconds, expired: expired)
        case .failed(let detail): self = .backendFailure(detail: "the Secret Service failed: \(detail)")
        }
    }

    /// The case a D-Bus error of name `name`, with the message `detail`, stands for.
    init(remote name: String, detail: String, operation: String, seconds: Double) {
        // The service's words: shown in one line, their control characters escaped.
        let detail = escapedForDisplay(detail)
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            self = .noSecretService(detail: detail)
        case _ where vanishedObjectErrors.contains(name):
            self = .noDefaultCollection(detail: detail)
        case "org.freedesktop.Secret.Error.IsLocked":
            self = .locked(detail: detail)
        case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.AuthFailed":
            self = .permissionDenied(detail: detail)
        case "org.freedesktop.DBus.Error.NoReply" where detail.contains("disconnected"):
            // The provider quit (or crashed) with our call pending: the bus answers for it.
            self = .noSecretService(detail: "the Secret Service quit before it answered: \(detail)")
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout":
            self = .timedOut(operation: operation, seconds: seconds)
        default:
            self = .backendFailure(detail: "the Secret Service failed: \(detail)")
        }
    }
}

/// The D-Bus errors that answer a call on an object that does not exist: for an item, one another
/// client deleted between our search and this call (gnome-keyring 42 answers `UnknownMethod`
/// "Object does not exist at path"; KeePassXC, Qt's D-Bus, `UnknownInterface`); for a
/// collection, no default keyring.
let vanishedObjectErrors = [
    "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownObject",
    "org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.Secret.Error.NoSuchObject",
]

/// Clears `error` and returns true when it says the item a libsecret call was made on no longer
/// exists (another client deleted it after it was found): libsecret's `SECRET_ERROR_NO_SUCH_OBJECT`,
/// or one of ``vanishedObjectErrors``.
func clearingVanishedItemError(_ error: GErrorSlot) -> Bool {
    guard let failure = error.pointee.map(GLibError.init) else { return false }
    let vanished: Bool
    if failure.domain == keychain_cli_secret_error_quark() {
        vanished = failure.code == Int32(SECRET_ERROR_NO_SUCH_OBJECT.rawValue)
    } else {
        vanished = failure.remoteName.map(vanishedObjectErrors.contains) ?? false
    }
    if vanished { _ = takeError(error) }
    return vanished
}

extension BoundedOperation {
    /// Runs `body` as ``run(_:seconds:meaning:_:)`` does, with what the Secret Service's
    /// and libsecret's errors mean.
    static func run<T>(_ what: String, seconds: Double, _ body: (BoundedOperation) throws -> T) throws(KeychainError)
        -> T
    {
        try run(what, seconds: seconds, meaning: KeychainError.init, body)
    }
}
