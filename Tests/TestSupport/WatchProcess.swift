import Foundation

/// A running `keychain-cli watch`, whose output lines are collected as they come, with the time
/// each arrived.
public final class WatchProcess: @unchecked Sendable {
    public let process: ChildProcess
    private let condition = NSCondition()
    private var lines: [(text: String, time: Date)] = []
    private var partial = Data()
    private var ended = false
    private var errorFile: URL

    /// Starts `keychain-cli watch` with `arguments` (after `watch`) in the test's environment
    /// (``cliEnvironment(session:)`` plus `extra`), and returns once it reports changes: it
    /// writes `readyKey` of `service` until a line for it comes (deleting it afterwards).
    public init(
        _ arguments: [String] = [], global: [String] = [], session: KeyringSession? = KeyringSession.current,
        extra: [String: String] = [:], service: String, readyKey: String = "watch-ready"
    ) throws {
        var environment = cliEnvironment(session: session)
        environment.merge(extra) { _, new in new }
        errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("kc-watch-\(UUID().uuidString)")
        let output = Pipe()
        process = try ChildProcess(
            keychainCLIPath, global + ["watch"] + arguments, environment: environment,
            files: [(0, "/dev/null", O_RDONLY), (2, errorFile.path, O_WRONLY | O_CREAT | O_TRUNC)],
            descriptors: [(1, output.fileHandleForWriting.fileDescriptor)])
        try output.fileHandleForWriting.close()
        let reader = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let data = reader.availableData
                condition.lock()
                if data.isEmpty {
                    ended = true
                } else {
                    partial.append(data)
                    while let newline = partial.firstIndex(of: 10) {
                        lines.append((String(decoding: partial[partial.startIndex..<newline], as: UTF8.self), Date()))
                        partial = Data(partial[(newline + 1)...])
                    }
                }
                condition.broadcast()
                condition.unlock()
                if data.isEmpty { return }
            }
        }
        // Ready once a write of ours is seen.
        let deadline = Date() + 30
        var ready = false
        var attempt = 0
        while !ready && Date() < deadline && process.isRunning {
            // A new value each time: a poll that began after the first write sees the second change.
            attempt += 1
            let result = try cli(
                ["-s", service, "set", readyKey], stdin: Data("\(attempt)".utf8), session: session, extra: extra)
            guard result.status == 0 else { throw FixtureFailed(detail: "watch: set \(readyKey): \(result.stderr)") }
            ready = waitForLine(containing: readyKey, timeout: 0.5) != nil
        }
        guard ready else { throw FixtureFailed(detail: "watch: watch never reported \(readyKey): \(stderr)") }
        _ = try cli(["-s", service, "delete", readyKey], session: session, extra: extra)
        _ = waitForLine(containing: "deleted", timeout: 5)
        consumeAll()
    }

    deinit {
        process.stop(grace: 0)
        try? FileManager.default.removeItem(at: errorFile)
    }

    /// What it wrote to stderr so far.
    public var stderr: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

    /// Removes and returns the first line containing `text` (earlier lines are dropped with it),
    /// waiting up to `timeout` seconds; nil if none came.
    @discardableResult
    public func waitForLine(containing text: String, timeout: Double = 10) -> (text: String, time: Date)? {
        let deadline = Date() + timeout
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let index = lines.firstIndex(where: { $0.text.contains(text) }) {
                let line = lines[index]
                lines.removeFirst(index + 1)
                return line
            }
            if ended || !condition.wait(until: deadline) { return nil }
        }
    }

    /// The next `count` lines, waiting up to `timeout` seconds for them (fewer if they do not come).
    public func nextLines(_ count: Int, timeout: Double = 10) -> [String] {
        let deadline = Date() + timeout
        condition.lock()
        defer { condition.unlock() }
        while lines.count < count && !ended && condition.wait(until: deadline) {}
        let taken = lines.prefix(count).map(\.text)
        lines.removeFirst(taken.count)
        return taken
    }

    /// Drops every line received so far and returns them.
    @discardableResult
    public func consumeAll() -> [String] {
        condition.lock()
        defer { condition.unlock() }
        defer { lines.removeAll() }
        return lines.map(\.text)
    }

    /// Sends `signal` and returns the exit status (nil when it did not end within 10 s).
    public func stop(_ signal: Int32 = SIGINT) -> ProcessResult? {
        process.signal(signal)
        return waitForExit()
    }

    /// Waits up to `timeout` seconds for it to end on its own.
    public func waitForExit(timeout: Double = 10) -> ProcessResult? {
        guard process.wait(timeout: timeout), let status = process.status else { return nil }
        return ProcessResult(
            status: status.code, signaled: status.signaled,
            stdout: Data(consumeAll().map { $0 + "\n" }.joined().utf8), stderr: stderr)
    }
}

/// A test fixture (a watch, a server, a helper built from source) that could not be set up.
public struct FixtureFailed: Error, CustomStringConvertible {
    public var detail: String
    public init(detail: String) { self.detail = detail }
    public var description: String { detail }
}
