import Foundation
import TestSupport
import Testing

/// Writes to a tree vault from many processes at once, and killed midway.
@Suite("Tree vaults: racing writers and SIGKILL lose nothing")
struct TreeVaultWriteTests {
    /// Eight processes each set their own keys and all race on one key, while `generate` (only
    /// if there is none) races on another: every key is there with its value, the raced key
    /// holds one of the values written, and exactly one generate stored.
    @Test func racingWritersThroughEveryPathLoseNothing() throws {
        try TreeFixture.run { tree in
            let script = #"""
                for w in 0 1 2 3 4 5 6 7; do
                  ( for i in 0 1 2 3 4; do
                      printf "v$w-$i" | "$KC" -s ci set "k$w-$i" || echo "set k$w-$i failed" >&2
                      printf "raced-$w-$i" | "$KC" -s ci set raced || echo "set raced failed" >&2
                    done
                    "$KC" -s ci generate once >/dev/null 2>&1; echo "generate $?" ) &
                done
                wait
                """#
            let raced = try shell(script)
            #expect(!raced.stderr.contains("failed"), "\(raced.stderr)")
            let generated = raced.stdoutText.split(separator: "\n").filter { $0.hasPrefix("generate") }
            #expect(generated.filter { $0 == "generate 0" }.count == 1, "\(generated)")
            #expect(generated.filter { $0 == "generate 73" }.count == 7, "\(generated)")
            for w in 0..<8 {
                for i in 0..<5 {
                    #expect(try cli(["-s", "ci", "get", "k\(w)-\(i)"]).stdoutText == "v\(w)-\(i)")
                }
            }
            #expect(try cli(["-s", "ci", "get", "raced"]).stdoutText.hasPrefix("raced-"))
            let listed = try cli(["-s", "ci", "list"]).stdoutText.split(separator: "\n")
            #expect(listed.count == 8 * 5 + 2)
            // No temporary file is left beside the items.
            let files = try FileManager.default.contentsOfDirectory(atPath: tree.vault + "/ci")
            #expect(files.allSatisfy { $0.hasSuffix(".age") && !$0.hasPrefix(".") }, "\(files)")
        }
    }

    /// Writers killed with SIGKILL at random moments: every item file that is there opens whole
    /// (the old value or the new), and the next write removes what a kill left.
    @Test func sigkillDuringWritesLeavesEveryItemWhole() throws {
        try TreeFixture.run { tree in
            for key in ["a", "b", "c"] { #expect(try cli(["-s", "ci", "set", key], input: "first").status == 0) }
            let script = #"""
                for round in $(seq 1 30); do
                  head -c 200000 /dev/urandom | base64 -w0 | "$KC" -s ci set "$(printf 'a\nb\nc' | shuf -n1)" &
                  pid=$!
                  sleep "0.0$((RANDOM % 9))"
                  kill -KILL $pid 2>/dev/null
                  wait $pid 2>/dev/null
                done
                true
                """#
            _ = try shell(script)
            for key in ["a", "b", "c"] {
                let read = try cli(["-s", "ci", "get", key])
                #expect(read.status == 0, "\(key): \(read.stderr)")
                #expect(read.stdoutText == "first" || read.stdout.count > 100_000)
                #expect(try runAge(["-d", "-i", tree.identity, tree.item("ci", key)]).status == 0)
            }
            #expect(try cli(["-s", "ci", "set", "a"], input: "after").status == 0)
            #expect(try cli(["-s", "ci", "list"]).stdoutText == "a\nb\nc\n")
        }
    }

    /// `export` of a single-file vault piped into `import` on a tree vault moves every item
    /// with its value and dates, and back again: the migration the docs give.
    @Test func exportPipedIntoImportMovesAVaultBetweenTheTwoLayouts() throws {
        try TreeFixture.run { tree in
            let single = CLIBackend.vaultEnvironment(tree.scratch.path("single.age"))
            let exported = try CLIBackend.$overrides.withValue(single) {
                for (key, value) in [("a/b", "one"), ("token", "two\nlines"), ("bin", "\u{1}\u{2}")] {
                    #expect(try cli(["-s", "ci", "set", key], stdin: Data(value.utf8)).status == 0)
                }
                return try cli(["-s", "ci", "export", "--yes"])
            }
            #expect(exported.status == 0, "\(exported.stderr)")
            let imported = try cli(["-s", "ci", "import"], stdin: exported.stdout)
            #expect(imported.status == 0, "\(imported.stderr)")
            let back = try cli(["-s", "ci", "export", "--yes"])
            let decode = { (data: Data) throws -> [[String: String]] in
                let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                return (object?["items"] as? [[String: Any]] ?? []).map { item in
                    item.compactMapValues { $0 as? String }.filter { $0.key != "modified" }
                }
            }
            #expect(
                try decode(back.stdout).sorted { $0["key"]! < $1["key"]! }
                    == decode(exported.stdout).sorted { $0["key"]! < $1["key"]! })
            #expect(try cli(["-s", "ci", "get", "token"]).stdoutText == "two\nlines")
        }
    }
}
