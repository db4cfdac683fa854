import KeychainFacade
import KeychainSecretService

extension Keychain {
    /// A keychain for the service named `service` on the desktop's Secret Service
    /// (``SecretServiceStore`` with its default time limit).
    /// - Throws: ``KeychainError/invalidName(kind:reason:)`` when `service` is not a valid name.
    public convenience init(service: String) throws {
        try self.init(service: service, store: SecretServiceStore())
    }
}
