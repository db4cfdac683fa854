import Foundation
import KeychainCore
import TestSupport
import Testing

/// The openbao backend on a 3-node Raft cluster of real `bao` servers on loopback (started once
/// for the suite, about 10 s): writes through a standby, reads that see them, and the leader
/// killed with SIGKILL while a writer loop runs. The tests run in any order: one of them kills
/// a leader, and two nodes of three still make a quorum.
@Suite("OpenBao 3-node Raft cluster", .serialized)
struct OpenBaoClusterTests {
    static let cluster = Result { try OpenBaoCluster() }

    /// A node that is not the active one now.
    private func standby(_ cluster: OpenBaoCluster) throws -> OpenBaoServer {
        let leader = try #require(cluster.leader(among: cluster.nodes.filter { $0.serverProcessIdentifier != nil }))
        return try #require(cluster.nodes.first { $0 !== leader && $0.serverProcessIdentifier != nil })
    }

    @Test func aProcessReadsItsOwnWritesThroughAStandby() throws {
        let cluster = try Self.cluster.get()
        let node = try standby(cluster)
        let store = OpenBaoStore(
            configuration: try OpenBaoConfiguration(
                address: node.address, credentials: .token(cluster.rootToken, source: "test")),
            timeout: 30)
        let service = try ServiceName("read-your-writes-\(UUID())")
        let key = try KeychainKey("k")
        // The standby applies the leader's log a moment after the write is acknowledged; the
        // store sends the write's X-Vault-Index so that each read sees at least that state.
        for round in 0..<50 {
            let value = Data("value \(round)".utf8)
            try store.setSecret(value, service: service, key: key)
            #expect(try store.secret(service: service, key: key) == value, "round \(round)")
            if round.isMultiple(of: 10) {
                #expect(try store.items(service: service).map(\.key) == ["k"])
            }
        }
        #expect(try store.deleteSecret(service: service, key: key))
        #expect(try store.secret(service: service, key: key) == nil)
    }

    @Test func everyWriteThatSucceededSurvivesTheLeadersDeath() throws {
        let cluster = try Self.cluster.get()
        let leader = try #require(cluster.leader())
        let target = try standby(cluster)
        let leaderProcess = try #require(leader.serverProcessIdentifier)
        let scratch = try ScratchDirectory("raft-writer")
        defer { scratch.remove() }
        let environment = [
            "KEYCHAIN_BACKEND": "openbao", "BAO_ADDR": target.address, "BAO_TOKEN": cluster.rootToken,
            "PATH": "/usr/bin:/bin", "HOME": scratch.url.path, "KC": keychainCLIPath,
            "LEADER": String(leaderProcess),
        ]
        // 40 writes in a row through the standby; SIGKILL to the leader 50 ms into write 10.
        let writer = """
            for i in $(seq 1 40); do
              [ $i = 10 ] && ( sleep 0.05; kill -9 $LEADER ) &
              start=$(date +%s.%N)
              printf 'value-%s' $i | $KC --timeout 30 -s ha set k$i 2>>"$HOME/errors"
              status=$?
              echo "$i $status $start $(date +%s.%N)"
            done
            """
        let run = try runProcess("/bin/bash", ["-c", writer], environment: environment, timeout: 300)
        let rows = run.stdoutText.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(rows.count == 40)
        let errors = (try? String(contentsOfFile: scratch.path("errors"), encoding: .utf8)) ?? ""
        var slowest = 0.0
        for row in rows {
            #expect(row[1] == "0", "write \(row[0]) failed: \(errors)")
            slowest = max(slowest, (Double(row[3]) ?? 0) - (Double(row[2]) ?? 0))
        }
        print("raft failover: slowest of 40 writes through a standby took \(slowest) s")
        // A new leader among the two that are left, and every write that returned 0 is there.
        let survivors = cluster.nodes.filter { $0 !== leader }
        try cluster.waitFor("a new leader") { cluster.leader(among: survivors) != nil }
        for row in rows where row[1] == "0" {
            let read = try runProcess(keychainCLIPath, ["-s", "ha", "get", "k\(row[0])"], environment: environment)
            #expect(read.stdoutText == "value-\(row[0])", "k\(row[0]): \(read.stderr)")
        }
        let listed = try runProcess(keychainCLIPath, ["-s", "ha", "list"], environment: environment)
        #expect(listed.stdoutText.split(separator: "\n").count == rows.filter { $0[1] == "0" }.count)
    }
}
