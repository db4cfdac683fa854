import Foundation

/// Three real `bao` servers on loopback forming one Raft cluster: integrated storage, nodes 2 and
/// 3 joining node 1 by `retry_join`, one unseal key, KV version 2 at `secret/`. What a team runs
/// in production, minus TLS between the nodes' APIs (Raft's own cluster port is TLS anyway).
public final class OpenBaoCluster: @unchecked Sendable {
    public let nodes: [OpenBaoServer]
    public private(set) var rootToken = ""

    public init(size: Int = 3) throws {
        let ports = try (0..<size).map { _ in (api: try freePort(), cluster: try freePort()) }
        let joins = ports.map { "  retry_join { leader_api_addr = \"http://127.0.0.1:\($0.api)\" }" }
        var nodes: [OpenBaoServer] = []
        for (index, port) in ports.enumerated() {
            let directory = try ScratchDirectory("bao-raft")
            try FileManager.default.createDirectory(atPath: directory.path("raft"), withIntermediateDirectories: true)
            // performance_multiplier = 1: Raft's tightest timings, so an election takes seconds, not tens.
            let configuration = """
                storage "raft" {
                  path = "\(directory.path("raft"))"
                  node_id = "node\(index + 1)"
                  performance_multiplier = 1
                \(joins.joined(separator: "\n"))
                }
                listener "tcp" {
                  address = "127.0.0.1:\(port.api)"
                  cluster_address = "127.0.0.1:\(port.cluster)"
                  tls_disable = true
                }
                api_addr = "http://127.0.0.1:\(port.api)"
                cluster_addr = "https://127.0.0.1:\(port.cluster)"
                disable_mlock = true
                """
            try configuration.write(toFile: directory.path("node.hcl"), atomically: true, encoding: .utf8)
            nodes.append(
                try OpenBaoServer(
                    arguments: ["server", "-config=\(directory.path("node.hcl"))"],
                    address: "http://127.0.0.1:\(port.api)", directory: directory))
        }
        self.nodes = nodes
        do {
            try form()
        } catch {
            stop()
            throw error
        }
    }

    /// Initializes node 1, unseals every node once it has joined, and waits for three voters.
    private func form() throws {
        let first = nodes[0]
        try first.waitUntilServing(path: "sys/health", accept: [501, 503])
        let initialized = try first.api(
            "PUT", "sys/init", json: #"{"secret_shares":1,"secret_threshold":1}"#, token: nil)
        let answer = jsonObject(initialized.body)
        guard let key = (answer["keys_base64"] as? [String])?.first, let token = answer["root_token"] as? String
        else { throw SessionError("bao operator init failed: \(initialized.status) \(initialized.body)") }
        rootToken = token
        for node in nodes { node.setRootToken(token) }
        let unseal = #"{"key":"\#(key)"}"#
        try first.api("PUT", "sys/unseal", json: unseal, token: nil)
        try waitFor("node 1 to become active") { try first.api("GET", "sys/health", token: nil).status == 200 }
        // Autopilot promotes a joined node to voter after it has been healthy this long (default 10 s).
        try first.api("POST", "sys/storage/raft/autopilot/configuration", json: #"{"server_stabilization_time":"1s"}"#)
        for node in nodes.dropFirst() {
            // A node is "initialized" (and takes the unseal key) only once retry_join reached the leader.
            try waitFor("\(node.address) to join") {
                jsonObject(try node.api("GET", "sys/seal-status", token: nil).body)["initialized"] as? Bool == true
            }
            try waitFor("\(node.address) to unseal") {
                jsonObject(try node.api("PUT", "sys/unseal", json: unseal, token: nil).body)["sealed"] as? Bool
                    == false
            }
        }
        try waitFor("\(nodes.count) voters") {
            let configuration = jsonObject(try first.api("GET", "sys/storage/raft/configuration").body)
            let servers = ((configuration["data"] as? [String: Any])?["config"] as? [String: Any])?["servers"]
            return (servers as? [[String: Any]])?.filter { $0["voter"] as? Bool == true }.count == nodes.count
        }
        try first.enableKV("secret")
        // A standby learns of the mount when it applies the leader's log: until then it answers
        // that there is none (CI saw a test's first write through a standby fail so).
        for node in nodes.dropFirst() {
            try waitFor("\(node.address) to know the mount secret/") {
                try node.api("GET", "sys/internal/ui/mounts/secret").status == 200
            }
        }
    }

    /// The node that is active now (its health answers 200; standbys answer 429), if any.
    public func leader(among candidates: [OpenBaoServer]? = nil) -> OpenBaoServer? {
        (candidates ?? nodes).first { (try? $0.api("GET", "sys/health", token: nil).status) == 200 }
    }

    /// Polls `condition` (``eventually(timeout:interval:_:)``, an error counting as not yet) every
    /// 100 ms for 60 s.
    public func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
        if eventually(timeout: 60, interval: 0.1, { (try? condition()) == true }) { return }
        throw SessionError("the cluster timed out waiting for \(what); node 1 log: \(nodes[0].log.suffix(2000))")
    }

    public func stop() {
        for node in nodes { node.stop() }
    }

    deinit { stop() }
}
