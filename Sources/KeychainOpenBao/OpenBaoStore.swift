import FoundationEssentials
import Glibc
import KeychainStore
import KeychainSystem

/// Secrets in a KV version 2 mount of OpenBao or HashiCorp Vault: a service is a secret (a path
/// under the mount), a key is one field of it. `keychain-cli -s ci get github-token` reads what
/// `bao kv put secret/ci github-token=…` wrote, and `bao kv get -field=github-token secret/ci`
/// reads what `set` wrote (see ``KVValue`` for binary secrets).
///
/// Writes are JSON merge PATCHes of the changed fields, which the server applies atomically, so
/// concurrent writers of different keys of one service all survive; the first write of a secret,
/// every write under a policy without `patch`, and every write on a mount (or secret) with
/// `cas_required`, is a check-and-set of the whole secret (read its version, write with `cas` =
/// that version, again on a mismatch). A mount that is missing, or is not KV version 2, is refused
/// (see OpenBaoMount.swift) instead of reading as empty.
public final class OpenBaoStore: SecretStore {
    let client: OpenBaoClient
    /// `list --json` dates: each secret's creation time costs one more request per secret.
    let readsCreationDates: Bool
    /// Whether ``requireKVVersion2()`` found the mount to be KV version 2.
    let mountVerified = Locked(false)

    public var configuration: OpenBaoConfiguration { client.configuration }

    /// - Parameter readsCreationDates: whether ``items(service:)`` asks each secret's metadata
    ///   for its creation time (one more request per secret).
    public init(
        configuration: OpenBaoConfiguration, timeout: Double = defaultStoreTimeout, readsCreationDates: Bool = true
    ) {
        client = OpenBaoClient(configuration: configuration, timeout: timeout)
        self.readsCreationDates = readsCreationDates
    }

    public func secret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Data? {
        try read(service).fields[key.rawValue].map(KVValue.decode)
    }

    public func setSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) {
        try Self.refuseReserved(key)
        try write(service, [key.rawValue: KVValue.encode(secret)])
    }

    public func deleteSecret(service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        let fields = try read(service).fields
        guard fields[key.rawValue] != nil else { return false }
        let details = Self.detailsField(key.rawValue)
        try write(service, fields[details] == nil ? [key.rawValue: .null] : [key.rawValue: .null, details: .null])
        return true
    }

    /// Fields per write: OpenBao refuses a request body of more than 1,000 JSON strings.
    static let fieldsPerWrite = 250

    public func items(service: ServiceName?) throws(KeychainError) -> [ItemInfo] {
        let services: [ServiceName]
        if let service { services = [service] } else { services = try secretPaths() }
        var items: [ItemInfo] = []
        for service in services {
            let secret = try read(service)
            guard !secret.fields.isEmpty else { continue }
            let created = readsCreationDates ? try creationDate(service) : nil
            for key in secret.fields.keys where !Self.isDetailsField(key) {
                let details = secret.details(of: key)
                // The label serve shows for a field without details, as the vault's; the writing
                // program is known only from details (bao kv put records none).
                let label =
                    details?.label ?? (try? KeychainKey(key)).map { ItemInfo.defaultLabel(service: service, key: $0) }
                items.append(
                    ItemInfo(
                        service: service.rawValue, key: key, label: label,
                        application: details?.attributes["application"], created: created, modified: secret.modified))
            }
        }
        return items
    }

    /// Deletes the service's secret as `bao kv delete` does: its current version is marked deleted,
    /// earlier versions stay (`bao kv undelete -versions=N` or `bao kv rollback` bring it back).
    public func deleteAll(service: ServiceName) throws(KeychainError) -> Int {
        let secret = try read(service)
        guard !secret.fields.isEmpty else { return 0 }
        let path = try dataPath(service)
        let response = try client.send("DELETE", path)
        guard (200..<300).contains(response.status) || response.status == 404 else {
            throw refused("DELETE", path, response)
        }
        return secret.fields.keys.filter { !Self.isDetailsField($0) }.count
    }

    // MARK: - KV version 2

    /// A secret's fields and the version they are (0: never written; fields empty: deleted).
    struct KVSecret {
        var fields: [String: JSONValue] = [:]
        var version = 0
        /// When the current version was written.
        var modified: Date?
    }

    func dataPath(_ service: ServiceName) throws(KeychainError) -> String {
        "\(try kvPath(configuration.mount))/data/\(try kvPath(service.rawValue))"
    }

    /// The service's secret as its current version, or `version`, holds it.
    func read(_ service: ServiceName, version: Int? = nil, deadline: Double? = nil) throws(KeychainError) -> KVSecret {
        struct Answer: Decodable {
            struct Version: Decodable {
                var data: [String: JSONValue]?
                var metadata: VersionMetadata?
            }
            var data: Version?
        }
        let path = try dataPath(service) + (version.map { "?version=\($0)" } ?? "")
        let response = try client.send("GET", path, deadline: deadline)
        guard response.status == 200 || response.status == 404 else { throw refused("GET", path, response) }
        if response.status == 404 {
            try requireMount(response)
            try requireKVVersion2()
        }
        // A deleted or destroyed current version answers 404 with its metadata: writes must name it.
        let answer: Answer?
        do {
            answer = try JSONDecoder().decode(Answer.self, from: Data(response.body))
        } catch {
            guard response.status != 200 else {
                throw .invalidData(
                    key: service.rawValue,
                    reason: "cannot be read: OpenBao's answer for \(path) does not decode as JSON (a value another "
                        + "tool nested more than 500 levels deep does not)")
            }
            answer = nil
        }
        if response.status == 200 && answer?.data?.metadata?.version == nil {
            throw .openBao(.answerNotKVVersion2(path: path, mount: configuration.mount))
        }
        return KVSecret(
            fields: response.status == 200 ? answer?.data?.data ?? [:] : [:],
            version: answer?.data?.metadata?.version ?? 0,
            modified: answer?.data?.metadata?.createdTime.flatMap(parseRFC3339))
    }

    /// Applies `changes` to the service's secret (`.null` removes a field): a JSON merge PATCH,
    /// which the server applies atomically and which sends only the changed fields; for a secret
    /// that does not exist yet (or whose current version is deleted), or a policy without the
    /// `patch` capability, a check-and-set write of the whole secret.
    /// - Returns: the version written.
    @discardableResult
    func write(_ service: ServiceName, _ changes: [String: JSONValue]) throws(KeychainError) -> KVVersion {
        struct Patch: Encodable { var data: [String: JSONValue] }
        let path = try dataPath(service)
        do throws(KeychainError) {
            let response = try client.send("PATCH", path, json: Patch(data: changes))
            if (200..<300).contains(response.status) { return KVVersion(response) }
            // 404: no secret yet; 405: no PATCH (an old server, or KV version 1, which the read
            // below refuses); 400 "check-and-set parameter required": a mount or secret with
            // cas_required, which the write below satisfies.
            let casRequired =
                response.status == 400
                && OpenBaoClient.errors(of: response).contains { $0.contains("check-and-set parameter required") }
            guard response.status == 404 || response.status == 405 || casRequired else {
                throw refused("PATCH", path, response)
            }
        } catch .serverDenied, .openBao(.noToken), .openBao(.loginRefused) {
            // No `patch` capability: read, merge and write back with check-and-set below.
        }
        // `change` always answers, so a version is always written.
        return try checkAndSet(service) { _ in changes } ?? KVVersion(number: 0, created: nil)
    }

    /// Adds the field only if the secret has none of that name, decided by check-and-set: of two
    /// writers, one adds and the other is told no.
    public func addSecret(_ secret: Data, service: ServiceName, key: KeychainKey) throws(KeychainError) -> Bool {
        try Self.refuseReserved(key)
        return try checkAndSet(service) { $0[key.rawValue] == nil ? [key.rawValue: KVValue.encode(secret)] : nil }
            != nil
    }

    /// Reads the service's secret, lets `change` turn its fields into the changes to make
    /// (`.null` removes a field; nil: write nothing) and writes them with check-and-set on the
    /// version read: a merge PATCH of the changes alone, or, for a secret with no current version
    /// or a policy without `patch`, the whole secret (OpenBao takes at most 1,000 JSON strings in a
    /// request: a PUT of a large secret fails where a PATCH of one field does not). On a version
    /// mismatch it reads and asks `change` again, within the time limit.
    /// - Returns: the version written; nil, and nothing written, when `change` gave nil.
    @discardableResult
    func checkAndSet(_ service: ServiceName, _ change: ([String: JSONValue]) -> [String: JSONValue]?)
        throws(KeychainError) -> KVVersion?
    {
        struct Write: Encodable {
            struct Options: Encodable { var cas: Int }
            var options: Options
            var data: [String: JSONValue]
        }
        let path = try dataPath(service)
        let deadline = monotonicSeconds() + client.timeout
        var patches = true
        while true {
            let current = try read(service, deadline: deadline)
            guard let changes = change(current.fields) else { return nil }
            var patched: HTTPResponse?
            if patches && !current.fields.isEmpty {
                do throws(KeychainError) {
                    let answer = try client.send(
                        "PATCH", path, json: Write(options: .init(cas: current.version), data: changes),
                        deadline: deadline)
                    // 404, 405: no current version to patch, or no PATCH: the whole secret below.
                    if answer.status != 404 && answer.status != 405 { patched = answer }
                } catch .serverDenied, .openBao(.noToken), .openBao(.loginRefused) {
                    patches = false  // no `patch` capability
                }
            }
            let (method, response): (String, HTTPResponse)
            if let patched {
                (method, response) = ("PATCH", patched)
            } else {
                var fields = current.fields
                for (key, value) in changes {
                    if value == .null { fields.removeValue(forKey: key) } else { fields[key] = value }
                }
                method = "PUT"
                response = try client.send(
                    "PUT", path, json: Write(options: .init(cas: current.version), data: fields), deadline: deadline)
            }
            if (200..<300).contains(response.status) { return KVVersion(response) }
            guard response.status == 400,
                OpenBaoClient.errors(of: response).contains(where: { $0.contains("check-and-set") })
            else { throw refused(method, path, response) }
            // Another writer stored a version in between: read it and apply the change again.
            guard monotonicSeconds() < deadline else {
                throw .serverTimedOut(
                    address: configuration.shownAddress, seconds: client.timeout,
                    detail: "other writers kept changing \(path)")
            }
            usleep(UInt32.random(in: 2_000...20_000))
        }
    }

    /// Every secret path under the mount, walking its metadata folders.
    func secretPaths() throws(KeychainError) -> [ServiceName] {
        struct Answer: Decodable {
            struct Keys: Decodable { var keys: [String] }
            var data: Keys?
        }
        var found: [ServiceName] = []
        var folders = [""]
        while let folder = folders.popLast() {
            let path =
                "\(try kvPath(configuration.mount))/metadata/"
                + (folder.isEmpty ? "" : try kvPath(String(folder.dropLast())) + "/") + "?list=true"
            let response = try client.send("GET", path)
            if response.status == 404 {
                try requireMount(response)
                try requireKVVersion2()
                continue
            }
            guard response.status == 200 else { throw refused("LIST", path, response) }
            for key in (try? JSONDecoder().decode(Answer.self, from: Data(response.body)))?.data?.keys ?? [] {
                if key.hasSuffix("/") {
                    folders.append(folder + key)
                } else if let name = try? ServiceName(folder + key) {
                    found.append(name)
                }
            }
        }
        return found
    }

    /// When the service's secret was first written, from its KV metadata.
    func creationDate(_ service: ServiceName) throws(KeychainError) -> Date? {
        struct Answer: Decodable {
            struct Metadata: Decodable {
                var createdTime: String?
                enum CodingKeys: String, CodingKey { case createdTime = "created_time" }
            }
            var data: Metadata?
        }
        let path = "\(try kvPath(configuration.mount))/metadata/\(try kvPath(service.rawValue))"
        let response = try client.send("GET", path)
        guard response.status == 200 else { return nil }
        return (try? JSONDecoder().decode(Answer.self, from: Data(response.body)))?.data?.createdTime
            .flatMap(parseRFC3339)
    }

    func refused(_ method: String, _ path: String, _ response: HTTPResponse) -> KeychainError {
        .serverUnavailable(
            detail: "OpenBao answered \(method) \(path) with HTTP \(response.status)"
                + "\(OpenBaoClient.errorSuffix(response)). Check that '\(configuration.mount)' is a KV "
                + "version 2 mount (bao secrets list -detailed)")
    }
}
