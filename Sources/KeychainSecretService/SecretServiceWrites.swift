internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainStore

// What the store's writes give the client (SecretServiceClient.swift): the attributes of a new
// item, and a new item stored in our own session within a libsecret operation.
extension SecretServiceStore {
    /// The attributes of an item `set` creates, as libsecret's store gives them for our schema
    /// (`xdg:schema` its name), on either way to the bus.
    func newItemAttributes(service: ServiceName, key: KeychainKey) -> [(String, String)] {
        [
            ("service", service.rawValue), ("username", key.rawValue), ("application", "keychain-cli"),
            ("xdg:schema", String(cString: connection.schema.pointee.name)),
        ]
    }

    /// Stores `secret` in the default collection as libsecret's `secret_password_storev` does (a
    /// new item with `attributes`, `label` and `contentType`, replacing one with the same
    /// attributes), but in keychain-cli's own session (see ``SecretSession``); false when libsecret
    /// must do it (see ``SecretServiceClient/create(_:attributes:label:contentType:)``).
    func storeDirectly(
        _ secret: Data, attributes: [(String, String)], label: String, contentType: String,
        _ operation: BoundedOperation
    ) throws -> Bool {
        try connection.sessionBus(operation, preparingSession: true).use { bus in
            try GDBusClient(connection, operation, bus).create(
                secret, attributes: attributes, label: label, contentType: contentType)
        }
    }
}
