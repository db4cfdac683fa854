import FoundationEssentials
import KeychainStore
import KeychainSystem

// Which mount the store talks to. A KV version 2 path on a KV version 1 mount answers like a
// missing secret (404 `{"errors":[]}`), and a write there stores a secret named `data/SERVICE`
// with fields `data` and `options`, which nothing reads back; a request to a mount that does not
// exist answers 404 "no handler for route". So a read that finds nothing asks once what the mount
// is, as `bao kv` does before each command (measured on OpenBao 2.7.2).
extension OpenBaoStore {
    /// What `sys/internal/ui/mounts/MOUNT` tells of the configured mount.
    enum MountKind: Equatable {
        case kvVersion2
        /// Another engine, or KV version 1.
        case other(type: String, version: String?)
        /// The token's policy grants nothing under the mount's path, or (with a root token) there
        /// is no such mount: OpenBao answers 403 to both.
        case notShown
    }

    func mountKind() throws(KeychainError) -> MountKind {
        struct Answer: Decodable {
            struct Mount: Decodable {
                var type: String?
                var options: [String: String]?
            }
            var data: Mount?
        }
        let response: HTTPResponse
        do {
            response = try client.send("GET", "sys/internal/ui/mounts/\(try kvPath(configuration.mount))")
        } catch .serverDenied, .openBao(.noToken), .openBao(.loginRefused) {
            return .notShown
        }
        guard response.status == 200, let mount = try? JSONDecoder().decode(Answer.self, from: Data(response.body)).data
        else { return .notShown }
        if mount.type == "kv" && mount.options?["version"] == "2" { return .kvVersion2 }
        return .other(type: mount.type ?? "unknown", version: mount.options?["version"])
    }

    /// Makes sure, once per store, that the mount is KV version 2, when an answer (a 404) may
    /// come from a mount that is not: a KV version 1 mount or another engine is refused (69); a
    /// mount the token's policy does not show is taken on trust (its reads and writes say more).
    func requireKVVersion2() throws(KeychainError) {
        guard !mountVerified.withLock({ $0 }) else { return }
        if case .other(let type, let version) = try mountKind() {
            throw .openBao(
                .notKVVersion2(
                    mount: configuration.mount, address: configuration.shownAddress, engine: Self.name(type, version)))
        }
        mountVerified.withLock { $0 = true }
    }

    /// Refuses an answer of a mount that does not exist: 404 "no handler for route".
    func requireMount(_ response: HTTPResponse) throws(KeychainError) {
        guard response.status == 404,
            OpenBaoClient.errors(of: response).contains(where: { $0.contains("no handler for route") })
        else { return }
        throw .openBao(.noMount(mount: configuration.mount, address: configuration.shownAddress))
    }

    /// `doctor`'s look at the mount: KV version 2, missing (69), another engine (69), or out of the
    /// token's reach (77, from the request under it).
    func checkMount(_ service: ServiceName) throws(KeychainError) -> String {
        let mount = configuration.mount
        switch try mountKind() {
        case .kvVersion2:
            return "\(mount)/ is KV version 2"
        case .other:
            try requireKVVersion2()
            return "\(mount)/ is KV version 2"
        case .notShown:
            // A request under it tells a missing mount (no route) from a policy that reaches nothing there.
            // (403 is thrown as denied: the token's policy reaches nothing there.)
            try requireMount(try client.send("GET", try dataPath(service)))
            return "\(mount)/ answers; its kind is hidden from this token"
        }
    }

    private static func name(_ type: String, _ version: String?) -> String {
        type == "kv" ? "a KV version \(version ?? "1") mount" : "a '\(type)' mount"
    }
}
