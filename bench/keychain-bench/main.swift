// In-process benchmark: a Keychain read served from its cache against one that asks the Secret
// Service. Run by `make bench` inside a private gnome-keyring session; prints a Markdown table.
import Foundation
import KeychainCore

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

let uncachedRuns = Int(ProcessInfo.processInfo.environment["BENCH_UNCACHED_RUNS"] ?? "") ?? 200
let cachedBatches = 200
let batchSize = 1_000

do {
    let keychain = try Keychain(service: "bench-in-process", store: SecretServiceStore(timeout: 10))
    let key = try KeychainKey("cached-read")
    try keychain.set("in-process-secret", for: key)
    let clock = ContinuousClock()

    // Each uncached read starts from an empty cache, so it goes to the keyring over D-Bus.
    var uncached: [Double] = []
    for _ in 0..<(uncachedRuns + 10) {
        keychain.removeCachedSecrets()
        let elapsed = try clock.measure { _ = try keychain.data(for: key) }
        uncached.append(microseconds(elapsed))
    }
    uncached.removeFirst(10)  // warm-up: the first read also connects and opens the session

    _ = try keychain.data(for: key)
    var cached: [Double] = []
    var sink = 0
    for _ in 0..<cachedBatches {
        let elapsed = try clock.measure {
            for _ in 0..<batchSize { sink &+= try keychain.data(for: key)?.count ?? 0 }
        }
        cached.append(microseconds(elapsed) / Double(batchSize))
    }
    precondition(sink == cachedBatches * batchSize * "in-process-secret".utf8.count)
    try keychain.delete(key)

    let slow = median(uncached)
    let fast = median(cached)
    print(
        """
        | in-process `Keychain.data(for:)` | median per read |
        |---|---|
        | uncached (asks gnome-keyring over D-Bus; \(uncachedRuns) reads) | \(String(format: "%.1f", slow)) µs |
        | cached (served from the lock-guarded cache; \(cachedBatches) × \(batchSize) reads) | \(String(format: "%.3f", fast)) µs |
        | cached read is faster by | **\(Int((slow / fast).rounded()))×** |
        """)
} catch {
    FileHandle.standardError.write(Data("keychain-bench: \(error)\n".utf8))
    exit(1)
}
