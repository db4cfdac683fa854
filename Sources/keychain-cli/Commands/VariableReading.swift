import FoundationEssentials
import Glibc
import KeychainCore

// Where the variables of exec and env come from: --env, --env-file and --from SERVICE, read
// before anything runs or is printed.

/// One variable read: its value, whether it is a secret (masked by exec) and the secret it was
/// read from (none for a literal or a --from key).
struct ReadVariable {
    var name: String
    var value: [UInt8]
    var isSecret: Bool
    var source: KeychainReference?
}

extension VariableSources {
    /// The variables of --env and each --env-file, parsed; a name given twice is refused (64).
    func parsedMappings() throws -> [EnvironmentMapping] {
        var variables = try mappings.map { text throws(FormatError) in
            try EnvironmentMapping(option: text, named: "--env")
        }
        for path in environmentFiles { variables += try EnvironmentMapping.read(file: path) }
        try EnvironmentMapping.checkNamedOnce(variables)
        return variables
    }

    /// The values of `mappings` and of each --from service, in order, read from `keychain`.
    /// - Parameters:
    ///   - outcome: what a failure stops ("nothing was run").
    ///   - text: whether a value must be UTF-8 (an environment variable of exec); a NUL byte is
    ///     refused either way.
    /// - Throws: ``CommandFailure`` naming the variable of the first that cannot be read (1 when
    ///   missing, 65 when binary), or two that set one name (65).
    func read(_ mappings: [EnvironmentMapping], from keychain: Keychain, outcome: String, text: Bool) throws
        -> [ReadVariable]
    {
        var read: [ReadVariable] = []
        for mapping in mappings {
            guard let reference = mapping.reference(defaultService: keychain.service.rawValue) else {
                guard case .literal(let value) = mapping.value else { continue }
                if let kind = secretKind(inAnyPartOf: value) {
                    warn(
                        "\(mapping.origin): \(mapping.name) is given \(kind) as a literal value, which is passed on "
                            + "as it is (unmasked). Store it and write keychain://SERVICE/KEY in its place")
                }
                read.append(ReadVariable(name: mapping.name, value: Array(value.utf8), isSecret: false))
                continue
            }
            let fix = "Hand it over as a file instead: exec --file NAME=KEY"
            let value =
                text
                ? Array(try keychain.text(of: reference, at: mapping.origin, outcome: outcome, fix: fix).utf8)
                : try keychain.bytes(of: reference, at: mapping.origin, outcome: outcome, fix: fix)
            read.append(ReadVariable(name: mapping.name, value: value, isSecret: true, source: reference))
        }
        var owners = Dictionary(mappings.map { ($0.name, $0.origin) }, uniquingKeysWith: { first, _ in first })
        var taken: Swift.Set<[UInt8]> = []  // by bytes: "é" and "e\u{301}" are two services
        for service in fromServices where taken.insert(Array(service.utf8)).inserted {  // given twice: read once
            let shownService = quotedValue(service, expected: "a service name")
            for (name, key, value) in try variables(of: service, store: keychain.store, outcome: outcome) {
                let origin = "--from \(shownService) (key \(quotedValue(key, expected: "a key name")))"
                if let owner = owners.updateValue(origin, forKey: name) {
                    throw CommandFailure.badData(
                        "\([name, key].allSatisfy { misplacedSecretKind($0) == nil } ? name : "one variable (not shown)") would be set by "
                            + "\(owner) and by \(origin); \(outcome). Use --except, --prefix, or an --env "
                            + "mapping for one of them")
                }
                read.append(ReadVariable(name: name, value: Array(value.utf8), isSecret: true))
            }
        }
        return read
    }

    /// The variables of `--from service`: every key that --only and --except let through, named
    /// as `export --format env` names it, after --prefix.
    /// - Throws: ``CommandFailure``: no key left (1), a binary secret (65); two keys of the
    ///   service that become one name (65).
    func variables(of service: String, store: any SecretStore, outcome: String) throws -> [(
        name: String, key: String, value: String
    )] {
        let keychain = Keychain(service: try ServiceName(service), store: store)
        let listing = try keychain.listing()
        let keys = Swift.Set(listing.items.map(\.key)).sorted().filter(selects)
        guard !keys.isEmpty else {
            throw CommandFailure(
                kind: .notFound,
                message: "--from \(quotedValue(service, expected: "a service name")) gives no secret"
                    + "\(only.isEmpty && except.isEmpty ? "" : " that --only and --except let through"); \(outcome). "
                    + "Check the service with keychain-cli -s SERVICE list")
        }
        let addresses = try keys.map { SecretAddress(service: keychain.service, key: try KeychainKey($0)) }
        var secrets: [(key: String, value: String)] = []
        for (key, secret) in zip(keys, try store.secrets(of: addresses, listedIn: listing)) {
            guard let secret else { continue }  // deleted since the listing
            guard let text = String(validating: secret, as: UTF8.self), !text.utf8.contains(0) else {
                throw CommandFailure.badData(
                    "the secret \(quotedValue(key, expected: "a key name")) of --from \(service) is binary and "
                        + "cannot go in the environment; \(outcome). Leave it out with --except")
            }
            secrets.append((key, text))
        }
        let variables: [(name: String, key: String, value: String)]
        do {
            variables = try DotEnv.variables(of: secrets).map { (prefix + $0.name, $0.key, $0.value) }
        } catch {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): \(error); \(outcome). Leave one out "
                    + "with --except")
        }
        // A key may be added by anyone who can write the service; a name that changes what the
        // command runs (PATH, LD_PRELOAD, BASH_ENV, GIT_EXTERNAL_DIFF, …) is taken only from an
        // explicit --env mapping.
        if let risky = ProgramVariables.first(in: variables) {
            throw CommandFailure.badData(
                "--from \(quotedValue(service, expected: "a service name")): the key "
                    + "\(quotedValue(risky.key, expected: "a key name")) would set \(risky.name), which changes what "
                    + "the command runs; \(outcome). Map it explicitly (--env \(risky.name)=KEY) if it is meant, "
                    + "or leave it out with --except or put --prefix before the names")
        }
        return variables
    }
}

extension EnvironmentMapping {
    /// Refuses (64) a name that two of `mappings` set.
    static func checkNamedOnce(_ mappings: [EnvironmentMapping]) throws {
        var seen: Swift.Set<String> = []
        for mapping in mappings where !seen.insert(mapping.name).inserted {
            throw CommandFailure.usage("\(mapping.origin): \(mapping.name) is mapped twice. Keep one mapping")
        }
    }

    /// The variables of an env file; a bad line is a usage error naming the file and line.
    static func read(file path: String) throws -> [EnvironmentMapping] {
        guard let bytes = try readInput(path: path, limit: smallInputLimit) else {
            throw CommandFailure.badData(
                "\(quotedPath(path)) is larger than 1 MiB; an env file holds variables and references, not large secrets"
            )
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CommandFailure.usage(
                "\(quotedPath(path)) is not UTF-8 text; an env file holds NAME=value, NAME=keychain://SERVICE/KEY or "
                    + "NAME=KEY lines")
        }
        return try EnvironmentMapping.parse(text, path: escapedForDisplay(path))
    }
}
