/// What went wrong on the bus, in the D-Bus layer's own words: the layer knows no store and no
/// Secret Service, so its callers say what each case means to them (the Secret Service client in
/// SecretServiceErrors.swift, in one place).
package enum DBusError: Error, Equatable, Sendable {
    /// The bus did not accept our authentication (or is not a D-Bus daemon): another way to it
    /// may still work.
    case refused
    /// The bus closed the connection, or it broke.
    case closed
    /// The bus sent bytes that are not a D-Bus message: the stream is out of step.
    case malformed
    /// Nothing arrived for `seconds` while doing `operation`.
    case timedOut(operation: String, seconds: Double)
    /// A GLib or GDBus call failed with `error`; `expired` when the operation's time ran out
    /// first (GLib then reports the cancellation).
    case glib(GLibError, expired: Bool, operation: String, seconds: Double)
    /// Anything else, described.
    case failed(String)
}
