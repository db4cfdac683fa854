import Glibc
import KeychainCore

/// Where the identities come from: --identity-fd or --identity, else $KEYCHAIN_IDENTITY_FD or
/// $KEYCHAIN_IDENTITY; nil when nothing is given.
func identitySource(_ settings: Settings) throws -> (descriptor: Int32?, path: String?, name: String)? {
    if let descriptor = settings.identityFD { return (descriptor, nil, "--identity-fd \(descriptor)") }
    if let path = settings.identity { return (nil, path, "--identity \(quotedPath(path))") }
    if let text = try environment("KEYCHAIN_IDENTITY_FD") {
        guard let number = Int32(text), number >= 0 else {
            throw CommandFailure.usage(
                "KEYCHAIN_IDENTITY_FD is \(quotedValue(text, expected: "a number")); it must be an open file descriptor number"
            )
        }
        return (number, nil, "$KEYCHAIN_IDENTITY_FD (\(number))")
    }
    guard let path = try environment("KEYCHAIN_IDENTITY") else { return nil }
    return (nil, path, "$KEYCHAIN_IDENTITY (\(quotedPath(path)))")
}

/// The identities of ``identitySource(_:)`` (none when nothing is given).
func identities(_ settings: Settings, vault: String) throws -> [VaultIdentity] {
    guard let source = try identitySource(settings) else { return [] }
    let read: [UInt8]?
    if let descriptor = source.descriptor {
        read = try readAll(descriptor, limit: smallInputLimit, name: "the identity's descriptor \(descriptor)")
        // Read once; never handed on to exec's command (it could seek back in a file, or
        // reopen /dev/stdin): close-on-exec, and a standard descriptor becomes /dev/null.
        if descriptor > STDERR_FILENO {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        } else {
            nullStandardDescriptor(descriptor)
        }
    } else {
        read = try readInput(path: source.path ?? "", limit: smallInputLimit)
    }
    guard let bytes = read else {
        throw CommandFailure.badData(
            "the identity file of \(source.name) is larger than 1 MiB; give the file age-keygen or vault keygen wrote (AGE-SECRET-KEY-… lines), an age plugin's (AGE-PLUGIN-NAME-1… lines) or an OpenSSH private key"
        )
    }
    if let key = try sshKeyIdentity(bytes, source: source.name, vault: vault, mayPrompt: settings.mayPrompt) {
        return [key]
    }
    switch VaultIdentity.parse(identityFile: String(decoding: bytes, as: UTF8.self)) {
    case .success(let identities):
        return identities
    case .failure(let error):
        throw KeychainError.noMatchingIdentity(
            path: vault, detail: "the identity file of \(source.name) is unusable: \(error)")
    }
}
