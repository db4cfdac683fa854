import ArgumentParser
import Glibc
import KeychainCore

/// What `cp` and `mv` share: their addresses, the stores, and the messages of each outcome.
struct Transfer {
    let moving: Bool
    let options: TransferOptions
    let settings: Settings

    private var verb: String { moving ? "moved" : "copied" }

    /// Copies or moves `arguments` (SRC DST: items, or services with -r / --service-to).
    func run(_ arguments: [String]) throws {
        // What the arguments mean first: a usage error before any store is opened (or asks).
        let wholeServices = options.recursive || options.serviceTo != nil
        if wholeServices,
            let reference = (arguments + [options.serviceTo].compactMap(\.self)).first(
                where: KeychainReference.isReference)
        {
            throw CommandFailure.usage(
                "with -r and --service-to, SRC and DST are services: write a service's name, not an address "
                    + "(\(quotedValue(reference, expected: "a service name")))")
        }
        if options.serviceTo != nil && !arguments.isEmpty {
            throw CommandFailure.usage("--service-to NEW takes no SRC or DST: it moves the service -s names")
        }
        if options.serviceTo == nil && arguments.count != 2 {
            throw CommandFailure.usage(
                "give SRC and DST (\(arguments.count) given): KEY, SERVICE/KEY or keychain://SERVICE/KEY each"
                    + (options.recursive ? "; with -r, two services" : ""))
        }
        let service = try settings.serviceName()
        let target = options.target(of: settings)
        let same = try settings.opensTheSameStore(as: target)
        if let new = options.serviceTo {
            return try services(service, try ServiceName(new), target, same)
        }
        if options.recursive {
            return try services(try ServiceName(arguments[0]), try ServiceName(arguments[1]), target, same)
        }
        let (from, to) = (
            try Self.address(arguments[0], service: service), try Self.address(arguments[1], service: service)
        )
        if same && from == to { throw CommandFailure.usage("SRC and DST are the same item, \(Self.shown(from))") }
        let transfer = try stores(target, same)
        let outcome = try naming(target) {
            moving
                ? try transfer.move(from, to: to, replacing: options.force)
                : try transfer.copy(from, to: to, replacing: options.force)
        }
        switch outcome {
        case .done: return
        case .missing: throw missing(from, written: arguments[0])
        case .destinationTaken: throw taken(to, done: nil)
        case .sourceChanged: throw changed([from])
        case .sourceKept(let error): throw kept(from, to, error)
        }
    }

    /// SRC's store, and DST's (the same one when `same`).
    private func stores(_ target: Settings, _ same: Bool) throws -> ItemTransfer {
        let source = try settings.store()
        return ItemTransfer(source: source, target: same ? source : try opened(target), sameStore: same)
    }

    /// Every item of `from` to `to`, under its own key: each DST checked free first (unless
    /// --force), then one item after the other.
    private func services(_ from: ServiceName, _ to: ServiceName, _ target: Settings, _ same: Bool) throws {
        if same && from == to {
            throw CommandFailure.usage(
                "SRC and DST are the same service, \(quotedValue(from.rawValue, expected: "a service name"))")
        }
        let transfer = try stores(target, same)
        let keys = try transfer.source.items(service: from).compactMap { try? KeychainKey($0.key) }.sorted()
        guard !keys.isEmpty else {
            throw CommandFailure.notFound(
                "the service \(quotedValue(from.rawValue, expected: "a service name")) holds no secrets; nothing was "
                    + "\(verb). keychain-cli list --all-services shows the services")
        }
        if !options.force {
            for key in keys where try transfer.target.containsSecret(service: to, key: key) {
                throw taken(SecretAddress(service: to, key: key), done: 0)
            }
        }
        var done = 0
        var changed: [SecretAddress] = []
        for key in keys {
            let (a, b) = (SecretAddress(service: from, key: key), SecretAddress(service: to, key: key))
            let outcome = try naming(target) {
                moving
                    ? try transfer.move(a, to: b, replacing: options.force)
                    : try transfer.copy(a, to: b, replacing: options.force)
            }
            switch outcome {
            case .done: done += 1
            case .missing: continue  // removed meanwhile by another writer: nothing to carry
            case .destinationTaken: throw taken(b, done: done)
            case .sourceChanged: changed.append(a)
            case .sourceKept(let error): throw kept(a, b, error)
            }
        }
        if !changed.isEmpty { throw self.changed(changed) }
    }

    /// `body`, its target's failure named as DST's.
    private func naming<T>(_ target: Settings, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as ItemTransfer.TargetFailure {
            throw LocatedError(origin: Self.dst(target), error: failure.error)
        }
    }

    /// How a message names DST's store and the options that open it.
    private static func dst(_ target: Settings) -> String {
        guard (try? target.resolvedBackend()) == .vault else {
            return "DST's backend (\((try? target.resolvedBackend())?.rawValue ?? "?"), --to-backend)"
        }
        return
            "DST's vault \(quotedPath((try? target.vaultPath()) ?? "?")) (opened by --to-vault, --to-passphrase-file, "
            + "--to-passphrase-fd, --to-identity, --to-identity-fd, else the environment)"
    }

    /// DST's store, a vault that exists opened now (its passphrase or identity read), so that a
    /// failure names DST and its --to-* options rather than SRC's.
    private func opened(_ target: Settings) throws -> any SecretStore {
        guard try target.resolvedBackend() == .vault else { return try target.store() }
        let path = (try? target.vaultPath()) ?? "?"
        do {
            let store = try target.store()
            if access(path, F_OK) == 0, let vault = store as? any DetailedSecretStore { try vault.prepareForWrites() }
            return store
        } catch {
            throw LocatedError(origin: Self.dst(target), error: error)
        }
    }

    /// KEY of `service`, SERVICE/KEY (split at the first `/`, as exec's mappings are) or a
    /// keychain://SERVICE/KEY reference (no ?field).
    static func address(_ text: String, service: ServiceName) throws -> SecretAddress {
        guard KeychainReference.isReference(text) else { return try SecretAddress(argument: text, service: service) }
        let reference: KeychainReference
        do {
            reference = try KeychainReference(parsing: text)
        } catch {
            throw CommandFailure.usage("a keychain:// address is malformed: \(error). See docs/commands.md#references")
        }
        guard reference.field == nil else {
            throw CommandFailure.usage("cp and mv carry whole items: an address takes no ?field=")
        }
        return SecretAddress(service: try ServiceName(reference.service), key: try KeychainKey(reference.key))
    }

    static func shown(_ address: SecretAddress) -> String {
        quotedValue("\(address.service.rawValue)/\(address.key.rawValue)", expected: "a key name")
    }

    private func missing(_ address: SecretAddress, written: String) -> CommandFailure {
        let split =
            written.contains("/") && !KeychainReference.isReference(written)
            ? " (an address with '/' names SERVICE/KEY, split at the first '/': a key of the service -s that holds "
                + "'/' is named in full, SERVICE/KEY)" : ""
        return CommandFailure.notFound("no secret at \(Self.shown(address))\(split); nothing was \(verb)")
    }

    private func taken(_ address: SecretAddress, done: Int?) -> CommandFailure {
        let progress = done.map { $0 == 0 ? "nothing was \(verb)" : "\($0) secrets were \(verb) before it" }
        return CommandFailure(
            kind: .exists,
            message: "a secret is stored at \(Self.shown(address)); \(progress ?? "nothing was \(verb)"). "
                + "--force replaces it")
    }

    /// The copy at `to` is made, the removal of `from` failed with `error`.
    private func kept(_ from: SecretAddress, _ to: SecretAddress, _ error: KeychainError) -> LocatedError {
        LocatedError(
            origin: "the secret was copied to DST (\(Self.shown(to))), but SRC (\(Self.shown(from))) could not be "
                + "removed, so both hold it (delete SRC once its backend lets you)",
            error: error)
    }

    private func changed(_ sources: [SecretAddress]) -> CommandFailure {
        CommandFailure(
            kind: .changedMeanwhile,
            message: "\(Self.shown(sources[0]))\(sources.count > 1 ? " and \(sources.count - 1) more" : "") kept "
                + "changing while it was moved (another program writes it, or wrote the copy): both are left as they "
                + "are, the copy as it was read last. Compare the two, then delete the one you do not want")
    }
}
