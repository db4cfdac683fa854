import FoundationEssentials
import KeychainCore

// How exec, env and inject turn a keychain://SERVICE/KEY[?field=NAME] reference into its value:
// one reader, one set of messages, each naming where the reference was (a variable, FILE:LINE).

extension Keychain {
    /// The bytes `reference` names: the secret, or one field of it.
    /// - Parameters:
    ///   - origin: where the reference was, for messages ("$TOKEN", "app.env:3").
    ///   - outcome: what did not happen because of a failure ("nothing was run").
    /// - Throws: ``CommandFailure``: no such secret or field (1), a field of a secret that is not
    ///   text (65); a ``LocatedError`` naming `origin` when the backend fails or a name is not valid.
    func value(of reference: KeychainReference, at origin: String, outcome: String) throws -> [UInt8] {
        let service: ServiceName
        let key: KeychainKey
        let stored: Data?
        do {
            service = try ServiceName(reference.service)
            key = try KeychainKey(reference.key)
            stored = try Keychain(service: service, store: store).data(for: key)
        } catch {
            // The backend's failure, or a name no item may have (a %00): where it was met, first.
            throw LocatedError(origin: origin, error: error)
        }
        let shownKey = quotedValue(key.rawValue, expected: "a key name")
        let shownService = quotedValue(service.rawValue, expected: "a service name")
        guard var secret = stored else {
            // A key that looks like a secret (a token pasted in the reference) is not repeated.
            let store =
                misplacedSecretKind(key.rawValue) == nil && misplacedSecretKind(service.rawValue) == nil
                ? ", or store it with keychain-cli -s \(shellQuoted(escapedForDisplay(service.rawValue))) set "
                    + shellQuoted(escapedForDisplay(key.rawValue)) : ""
            throw CommandFailure.notFound(
                "\(origin): no secret named \(shownKey) in service \(shownService); \(outcome). Check the "
                    + "reference\(store)")
        }
        defer { wipe(&secret) }
        guard let field = reference.field else { return Array(secret) }
        guard let text = String(validating: secret, as: UTF8.self) else {
            throw CommandFailure.badData(
                "\(origin): the secret \(shownKey) of service \(shownService) is not UTF-8 text, so ?field= cannot "
                    + "read its lines; \(outcome). Reference the whole secret")
        }
        guard let value = EntryFields.value(of: field, in: text) else {
            throw CommandFailure.notFound(
                "\(origin): the secret \(shownKey) of service \(shownService) has no field "
                    + "\(quotedValue(field, expected: "a field name")); \(outcome). keychain-cli -s SERVICE get KEY "
                    + "--field NAME reads one; its fields are the NAME: lines before the first empty line")
        }
        return Array(value.utf8)
    }

    /// The value of `reference` for an environment variable that may hold any byte but NUL.
    /// - Throws: as ``value(of:at:outcome:)``, and ``CommandFailure`` (65) for a NUL byte.
    func bytes(of reference: KeychainReference, at origin: String, outcome: String, fix: String) throws -> [UInt8] {
        let bytes = try value(of: reference, at: origin, outcome: outcome)
        guard !bytes.contains(0) else {
            throw CommandFailure.badData(
                "\(origin): the secret \(quotedValue(reference.key, expected: "a key name")) of service "
                    + "\(quotedValue(reference.service, expected: "a service name")) holds a NUL byte and cannot go in "
                    + "the environment; \(outcome). \(fix)")
        }
        return bytes
    }

    /// The value of `reference` as text, for an environment variable or (`place`) a template.
    /// - Throws: as ``value(of:at:outcome:)``, and ``CommandFailure`` (65) when the bytes are not
    ///   UTF-8 or hold a NUL, which no environment variable can carry.
    func text(
        of reference: KeychainReference, at origin: String, outcome: String, fix: String,
        place: String = "the environment"
    ) throws -> String {
        var bytes = try value(of: reference, at: origin, outcome: outcome)
        defer { wipe(&bytes) }
        guard let text = String(validating: bytes, as: UTF8.self), !bytes.contains(0) else {
            throw CommandFailure.badData(
                "\(origin): the secret \(quotedValue(reference.key, expected: "a key name")) of service "
                    + "\(quotedValue(reference.service, expected: "a service name")) is binary (not UTF-8 text, or a NUL "
                    + "byte) and cannot go in \(place); \(outcome). \(fix)")
        }
        return text
    }
}

extension KeychainReference {
    /// The reference `text` found at `origin`.
    /// - Throws: ``CommandFailure`` (64) naming `origin` and what is wrong, never the text (a
    ///   secret pasted where a reference goes).
    static func parsed(_ text: some StringProtocol, at origin: String, outcome: String) throws -> KeychainReference {
        do {
            return try KeychainReference(parsing: text)
        } catch {
            throw CommandFailure.usage(EnvironmentMapping.malformed(error, at: origin, outcome: outcome).description)
        }
    }
}
