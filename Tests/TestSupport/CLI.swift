import Foundation

/// Runs the built `keychain-cli` with `arguments` in ``cliEnvironment(session:)`` (plus `extra`).
public func cli(
    _ arguments: [String], stdin: Data? = nil, session: KeyringSession? = KeyringSession.current,
    extra: [String: String] = [:], timeout: Double = 60
) throws -> ProcessResult {
    var environment = cliEnvironment(session: session)
    environment.merge(extra) { _, new in new }
    return try runProcess(keychainCLIPath, arguments, stdin: stdin, environment: environment, timeout: timeout)
}

/// Runs the built `keychain-cli` with `arguments`, feeding `text` as its standard input.
public func cli(_ arguments: [String], input text: String, session: KeyringSession? = KeyringSession.current)
    throws -> ProcessResult
{
    try cli(arguments, stdin: Data(text.utf8), session: session)
}

/// Runs a script through `expect`, which gives the spawned commands a real terminal.
public func expect(_ script: String, session: KeyringSession? = KeyringSession.current) throws -> ProcessResult {
    var environment = cliEnvironment(session: session)
    environment["KEYCHAIN_CLI"] = keychainCLIPath
    environment["TERM"] = "dumb"
    return try runProcess("/usr/bin/expect", ["-c", script], environment: environment, timeout: 60)
}

/// Starts the built `keychain-cli` with `arguments` in ``cliEnvironment(session:)`` without
/// waiting for it; write its standard input through `input`, then close it.
public func launchCLI(_ arguments: [String]) throws -> (process: Process, input: FileHandle) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: keychainCLIPath)
    process.arguments = arguments
    process.environment = cliEnvironment()
    let input = Pipe()
    process.standardInput = input
    try process.run()
    return (process, input.fileHandleForWriting)
}
