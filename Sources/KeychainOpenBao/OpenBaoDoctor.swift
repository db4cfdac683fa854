import FoundationEssentials
import KeychainStore
import KeychainSystem

extension OpenBaoStore {
    /// `keychain-cli doctor` for OpenBao: the settings, the server (reachable, TLS, initialized,
    /// unsealed), the token, the KV version 2 mount, the token's capabilities on the service's
    /// secret, and a read of it. The round trip only reads: every write is a new KV version, and
    /// probes would push real versions out of the history (KV keeps 10 by default).
    /// - Parameter makeStore: builds the store from the settings; its error is the first check's.
    public static func diagnose(service: ServiceName, makeStore: () throws -> OpenBaoStore)
        -> (checks: [HealthCheck], failure: KeychainError?)
    {
        var report = HealthReport()
        var store: OpenBaoStore?
        report.run("settings") {
            let made = try makeStore()
            store = made
            let configuration = made.configuration
            return "address \(configuration.shownAddress), mount \(configuration.mount)"
                + (configuration.namespace.map { ", namespace \($0)" } ?? "")
                + ", token from \(made.client.tokenSource)"
        }
        guard let store else { return (report.checks, report.failure) }
        report.run("server") { try store.checkHealth() }
        report.run("token") { try store.checkToken() }
        report.run("mount") { try store.checkMount(service) }
        report.run("policy") { try store.checkCapabilities(service) }
        report.run("round trip") {
            let start = monotonicSeconds()
            let secret = try store.read(service)
            let milliseconds = Int(((monotonicSeconds() - start) * 1000).rounded())
            let path = try store.dataPath(service)
            return secret.version == 0
                ? "read \(path): no secret yet, the first set creates it (\(milliseconds) ms)"
                : "read \(path): version \(secret.version), \(secret.fields.count) key(s) (\(milliseconds) ms)"
        }
        return (report.checks, report.failure)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ response: HTTPResponse) -> T? {
        try? JSONDecoder().decode(type, from: Data(response.body))
    }

    func checkHealth() throws(KeychainError) -> String {
        struct Health: Decodable {
            var initialized: Bool?
            var sealed: Bool?
            var standby: Bool?
            var version: String?
        }
        let address = configuration.shownAddress
        let response = try client.send(
            "GET", "sys/health?standbyok=true&perfstandbyok=true", authenticated: false, raw: true,
            namespaced: false)
        let health = decode(Health.self, response)
        if health?.initialized == false {
            throw .serverUnavailable(
                detail: "OpenBao at \(address) is not initialized: run bao operator init, then unseal it")
        }
        if health?.sealed == true {
            throw .serverUnavailable(detail: "OpenBao at \(address) is sealed: unseal it (bao operator unseal)")
        }
        guard response.status == 200, let health else {
            throw refused("GET", "sys/health", response)
        }
        return "\(address) answers\(address.lowercased().hasPrefix("https") ? " over verified TLS" : ""): "
            + "OpenBao \(health.version ?? "?"), unsealed, \(health.standby == true ? "a standby node" : "the active node")"
    }

    func checkToken() throws(KeychainError) -> String {
        struct Answer: Decodable {
            struct Token: Decodable {
                var displayName: String?
                var policies: [String]?
                var ttl: Int?
                enum CodingKeys: String, CodingKey {
                    case displayName = "display_name"
                    case policies, ttl
                }
            }
            var data: Token?
        }
        let response = try client.send("GET", "auth/token/lookup-self")
        guard response.status == 200, let token = decode(Answer.self, response)?.data else {
            throw refused("GET", "auth/token/lookup-self", response)
        }
        let expiry = (token.ttl ?? 0) == 0 ? "does not expire" : "expires in \(token.ttl ?? 0) s"
        return "valid (from \(client.tokenSource)): \(token.displayName ?? "?"), policies "
            + (token.policies ?? []).joined(separator: ", ") + "; \(expiry)"
    }

    func checkCapabilities(_ service: ServiceName) throws(KeychainError) -> String {
        struct Request: Encodable { var paths: [String] }
        let path = try dataPath(service)
        let response = try client.send("POST", "sys/capabilities-self", json: Request(paths: [path]))
        guard response.status == 200, let answer = decode([String: JSONValue].self, response),
            case .array(let values)? = answer[path] ?? answer["capabilities"]
        else { throw refused("POST", "sys/capabilities-self", response) }
        let capabilities = values.compactMap { if case .string(let text) = $0 { text } else { nil } }
        let all = capabilities.contains("root")
        guard all || capabilities.contains("read") else {
            throw .serverDenied(
                detail: "the token's policy does not allow reading \(path) (capabilities: "
                    + "\(capabilities.joined(separator: ", "))). Grant read, create and update on it")
        }
        let writes = all || (capabilities.contains("create") && capabilities.contains("update"))
        return "\(path): \(capabilities.joined(separator: ", "))"
            + (writes ? "" : " (read only: set, delete and import will be denied)")
    }
}
