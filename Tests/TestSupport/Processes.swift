import Foundation

/// What a finished child process left behind.
public struct ProcessResult: Sendable {
    /// The exit status, or the signal number when ``signaled``.
    public var status: Int32
    /// Whether the process was ended by a signal.
    public var signaled = false
    public var stdout: Data
    public var stderr: String
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

public struct ProcessTimedOut: Error, CustomStringConvertible {
    public var command: [String]
    public var description: String { "timed out: \(command.joined(separator: " "))" }
}

/// Runs `executable` with `arguments` and `environment` (exactly: nothing inherited), feeding
/// `stdin` (or /dev/null), capturing stdout and stderr in files so no pipe can fill up.
/// - Throws: ``ProcessTimedOut`` (after killing it) when it runs longer than `timeout` seconds.
public func runProcess(
    _ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String],
    timeout: Double = 60
) throws -> ProcessResult {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("kc-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("out")
    let errURL = scratch.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    if let stdin {
        let inURL = scratch.appendingPathComponent("in")
        try stdin.write(to: inURL)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
    } else {
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
    }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(2_000) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        throw ProcessTimedOut(command: [executable] + arguments)
    }
    process.waitUntilExit()
    try out.close()
    try err.close()
    return ProcessResult(
        status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
        stdout: try Data(contentsOf: outURL), stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
}

/// The `keychain-cli` binary under test: `$KEYCHAIN_CLI`, else the one built beside the tests.
public let keychainCLIPath: String = {
    if let path = ProcessInfo.processInfo.environment["KEYCHAIN_CLI"] { return path }
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("keychain-cli").path
    if FileManager.default.isExecutableFile(atPath: beside) { return beside }
    // Package root/.build/debug, for runners whose argv[0] is elsewhere.
    return packageRoot.appendingPathComponent(".build/debug/keychain-cli").path
}()

/// The package's root directory (Tests/TestSupport/../..).
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// A service name no other test uses, so tests sharing a keyring never see each other's items.
public func uniqueService(_ label: String = "t") -> String {
    "\(label)-\(UUID().uuidString.prefix(8))"
}
