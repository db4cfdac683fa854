internal import CLibSecret
import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore
import KeychainSystem

// What libsecret does for a SecretServiceClient: a secret of a service without an encrypted
// session, unlocking locked items and performing a provider's prompts.
extension SecretServiceConnection {
    /// The secret of the item at `path` on `bus` (``SecretServiceClient/readSecret(at:)``); nil
    /// when the item no longer exists.
    func readSecret(at path: String, _ operation: BoundedOperation, _ bus: OpaquePointer) throws -> Data? {
        try SecretServiceClient(self, operation, bus).readSecret(at: path)
    }

    /// The secret of the item at `path` through libsecret, for a service without an encrypted session.
    func readSecretThroughLibsecret(at path: String, _ operation: BoundedOperation) throws -> Data? {
        try connect(operation, openSession: false).use(as: SecretService.self) { connection in
            // secret_service_get_secret_for_dbus_path / …_finish (opens the session if needed);
            // the path is a C copy that outlives the asynchronous call, not a Swift temporary.
            let cPath = strdup(path)!
            defer { free(cPath) }
            let value = try operation.call(
                { secret_service_get_secret_for_dbus_path(connection, cPath, $0, $1, $2) },
                finish: { secret_service_get_secret_for_dbus_path_finish(connection, $0, $1).map(takeSecretValue) })
            guard let value else {
                throw KeychainError.locked(detail: "the item was locked again before its secret was read")
            }
            return value
        }
    }

    /// Asks the Secret Service to unlock the locked items at `paths` (which may prompt, within the
    /// deadline) and returns the paths it unlocked: fewer than `paths` when there is no prompter
    /// or the prompt was dismissed.
    func unlock(_ paths: [String], _ operation: BoundedOperation) throws -> [String] {
        guard !paths.isEmpty else { return [] }
        return try connect(operation, openSession: false).use(as: SecretService.self) { connection in
            let copies = paths.map { strdup($0)! }
            defer {
                for copy in copies { free(copy) }
            }
            var vector: [UnsafePointer<gchar>?] = copies.map { UnsafePointer($0) } + [nil]
            // secret_service_unlock_dbus_paths / …_finish
            return try operation.call(
                { secret_service_unlock_dbus_paths(connection, &vector, $0, $1, $2) },
                finish: { result, error in
                    var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
                    _ = secret_service_unlock_dbus_paths_finish(connection, result, &unlocked, error)
                    return takeStrings(unlocked)
                })
        }
    }

    /// Performs, one after another, the prompts a provider answered a call with: KeePassXC
    /// answers every Item.Delete with one, which completes at once unless its user is asked to
    /// confirm (then this waits for the answer, within the deadline). A dismissed prompt is a
    /// refusal.
    func performPrompts(_ prompts: [String], _ operation: BoundedOperation) throws {
        guard !prompts.isEmpty else { return }
        try connect(operation, openSession: false).use(as: SecretService.self) { service in
            for prompt in prompts {
                // secret_service_prompt_at_dbus_path / …_finish: nil, and no error, when dismissed.
                let result = try operation.call(
                    { secret_service_prompt_at_dbus_path(service, prompt, nil, $0, $1, $2) },
                    finish: { OwnedVariant(takingIfAny: secret_service_prompt_at_dbus_path_finish(service, $0, $1)) })
                guard result != nil else {
                    throw KeychainError.permissionDenied(
                        detail: "the change was declined at the Secret Service's prompt")
                }
            }
        }
    }
}
