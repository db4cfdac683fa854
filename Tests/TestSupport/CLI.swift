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
/// waiting for it (its output thrown away); write its standard input through `input`, then close
/// it. A ``ChildProcess``: safe to signal until it is reaped.
public func launchCLI(_ arguments: [String]) throws -> (process: ChildProcess, input: FileHandle) {
    let input = Pipe()
    let process = try ChildProcess(
        keychainCLIPath, arguments, environment: cliEnvironment(),
        files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)],
        descriptors: [(0, input.fileHandleForReading.fileDescriptor)])
    try input.fileHandleForReading.close()
    return (process, input.fileHandleForWriting)
}
