import FoundationEssentials
import Glibc
import KeychainCore

// Where exec's secrets come from: --from SERVICE, and the mappings of --env, --env-file and --file.

extension KeychainCLI.Exec {
    /// The variables of `--from service`: every key that --only and --except let through, named
    /// as `export --format env` names it, after --prefix.
    /// - Throws: ``CommandFailure``: no key left (1), a binary secret (65); two keys of the
    ///   service that become one name (65).
    func variables(of service: String, store: any SecretStore) throws -> [(name: String, key: String, value: String)] {
        let keychain = Keychain(service: try ServiceName(service), store: store)
        let listing = try keychain.listing()
        let keys = Swift.Set(listing.items.map(\.key)).sorted().filter { key in
            (only.isEmpty || only.contains { fnmatch($0, key, 0) == 0 })
                && !except.contains { fnmatch($0, key, 0) == 0 }
        }
        guard !keys.isEmpty else {
            throw CommandFailure(
                kind: .notFound,
                message: "--from \(quotedValue(service, expected: "a service name")) gives no secret"
                    + "\(only.isEmpty && except.isEmpty ? "" : " that --only and --except let through"); nothing "
                    + "was run. Check the service with keychain-cli -s SERVICE list")
        }
        let addresses = try keys.map { SecretAddress(service: keychain.service, key: try KeychainKey($0)) }
        var secrets: [(key: String, value: String)] = []
        for (key, secret) in zip(keys, try store.secrets(of: addresses, listedIn: listing)) {
            guard let secret else { continue }  // deleted since the listing
            guard let text = String(validating: secret, as: UTF8.self), !text.utf8.contains(0) else {
                throw CommandFailure.badData(
                    "the secret \(quotedValue(key, expected: "a key name")) of --from \(service) is binary and "
                        + "cannot go in the environment; nothing was run. Leave it out with --except")
            }
            secrets.append((key, text))
        }
        let variables: [(name: String, key: String, value: String)]
        do {
            variables = try DotEnv.variables(of: secrets).map { (prefix + $0.name, $0.key, $0.value) }
        } catch {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): \(error); nothing was run. Leave one out "
                    + "with --except")
        }
        // A key may be added by anyone who can write the service; a name that changes what the
        // command runs (PATH, LD_PRELOAD, BASH_ENV, GIT_EXTERNAL_DIFF, …) is taken only from an
        // explicit --env mapping.
        if let risky = ProgramVariables.first(in: variables) {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): the key "
                    + "\(quotedValue(risky.key, expected: "a key name")) would set \(risky.name), which changes what "
                    + "the command runs; nothing was run. Map it explicitly (--env \(risky.name)=KEY) if it is meant, "
                    + "or leave it out with --except or put --prefix before the names")
        }
        return variables
    }
}

extension EnvironmentMapping {
    /// The mappings of an env file; a bad line is a usage error naming the file and line.
    static func read(file path: String) throws -> [EnvironmentMapping] {
        guard let bytes = try readInput(path: path, limit: smallInputLimit) else {
            throw CommandFailure.badData(
                "\(quotedPath(path)) is larger than 1 MiB; an env file holds mappings, not secrets")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CommandFailure.usage("\(quotedPath(path)) is not UTF-8 text; an env file holds NAME=KEY lines")
        }
        return try EnvironmentMapping.parse(text, path: path)
    }

    /// The secret's bytes (for `--file`).
    /// - Throws: ``KeychainError/notFound(service:key:)`` when missing.
    func secret(defaultService keychain: Keychain) throws -> [UInt8] {
        let target = try service.map { Keychain(service: try ServiceName($0), store: keychain.store) } ?? keychain
        let key = try KeychainKey(key)
        guard let secret = try target.data(for: key) else {
            throw KeychainError.notFound(service: target.service.rawValue, key: key.rawValue)
        }
        return Array(secret)
    }

    /// The secret as text for the environment.
    /// - Throws: ``KeychainError/notFound(service:key:)`` when missing; ``CommandFailure`` when it
    ///   is binary (an environment variable cannot hold NUL bytes or arbitrary bytes safely).
    func resolve(defaultService keychain: Keychain) throws -> String {
        let secret = try secret(defaultService: keychain)
        guard let text = String(validating: secret, as: UTF8.self), !text.utf8.contains(0) else {
            throw CommandFailure.badData(
                "the secret '\(key)' of service '\(service ?? keychain.service.rawValue)' is binary and cannot go in the environment "
                    + "(\(name)). Nothing was run; hand it over as a file instead: --file NAME=KEY")
        }
        return text
    }
}
