internal import CLibSecret
import KeychainDBus
import KeychainStore

// What the Secret Service's and libsecret's errors mean to a caller: one KeychainError case each
// (the answers gnome-keyring, KeePassXC and kwalletd5 give, as the integration tests meet them;
// docs/exit-codes.md says what each case means to a user), and an item that vanished under us,
// which is no error.

extension KeychainError {
    /// The case a libsecret/GDBus error stands for.
    init(_ error: GLibError, operation: String, seconds: Double, expired: Bool) {
        let message = error.message
        let remoteName = error.remoteName
        let detail = GDBusCalls.strippingRemotePrefix(message)

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
/// client deleted (see ``finishItemCall(_:_:_:)``); for a collection, no default keyring.
/// KeePassXC (Qt's D-Bus) answers UnknownInterface for the path of an item it removed.
let vanishedObjectErrors = [
    "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownObject",
    "org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.Secret.Error.NoSuchObject",
]

/// Finishes a D-Bus call made on one item: nil, and no error, when the item no longer exists. An
/// item deleted by another client between our search and this call is answered with
/// `UnknownMethod` "Object does not exist at path" (gnome-keyring 42), which for a collection
/// would mean no default keyring, but for an item means only that it is gone.
func finishItemCall(_ bus: OpaquePointer, _ result: OpaquePointer, _ error: GErrorSlot) -> OwnedVariant? {
    let reply = OwnedVariant(takingIfAny: g_dbus_connection_call_finish(bus, result, error))
    _ = clearingVanishedItemError(error)
    return reply
}

/// Clears `error` and returns true when it says the item a call was made on no longer exists
/// (see ``finishItemCall(_:_:_:)``; libsecret reports it as `SECRET_ERROR_NO_SUCH_OBJECT`).
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

    /// One D-Bus method call on the Secret Service object at `path` (an item): nil when the object
    /// no longer exists, because another client deleted it after it was found.
    func callItemMethod(
        _ bus: OpaquePointer, _ destination: String, _ path: String, _ interface: String, _ method: String,
        _ parameters: OwnedVariant?, replyType: OpaquePointer? = nil, meanwhile: () -> Void = {}
    ) throws -> OwnedVariant? {
        try callMethod(
            bus, destination, path, interface, method, parameters, replyType: replyType, meanwhile: meanwhile,
            finish: { finishItemCall(bus, $0, $1) })
    }
}
