import Foundation

/// The docker CLI `make deps` extracts from Debian's docker.io (`$DOCKER_CLI` overrides it).
public let dockerCLIPath: String = {
    if let path = ProcessInfo.processInfo.environment["DOCKER_CLI"] { return path }
    return packageRoot.appendingPathComponent(".build/docker-cli/usr/bin/docker").path
}()

/// A directory holding `docker-credential-keychain-cli`, a link to the binary under test.
public let dockerHelperDirectory = helperLinkDirectory("docker-credential-keychain-cli")

/// The environment of a docker credential helper or CLI run in the test: the test's own, with
/// `docker-credential-keychain-cli` first on PATH.
public func dockerEnvironment(session: KeyringSession? = KeyringSession.current, extra: [String: String] = [:])
    -> [String: String]
{
    var environment = cliEnvironment(session: session)
    environment.merge(extra) { _, new in new }
    environment["PATH"] = dockerHelperDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
    return environment
}

/// Runs `docker-credential-keychain-cli ACTION` (through its installed name) with `input`.
public func dockerHelper(_ action: String, _ input: String, session: KeyringSession? = KeyringSession.current)
    throws -> ProcessResult
{
    try runProcess(
        dockerHelperDirectory + "/docker-credential-keychain-cli", [action], stdin: Data(input.utf8),
        environment: dockerEnvironment(session: session))
}
