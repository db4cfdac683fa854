import Foundation

/// Runs the real `git` with `arguments` in the test's environment (``cliEnvironment(session:)``),
/// with keychain-cli as its only credential helper (`git-credential-keychain-cli`, a link to the
/// binary under test, first on PATH), no system or user configuration, and no prompts.
public func git(
    _ arguments: [String], input: String? = nil, session: KeyringSession? = KeyringSession.current,
    extra: [String: String] = [:]
) throws -> ProcessResult {
    var environment = cliEnvironment(session: session)
    environment.merge(extra) { _, new in new }
    environment["PATH"] = gitHelperDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
    environment["GIT_TERMINAL_PROMPT"] = "0"
    environment["GIT_CONFIG_NOSYSTEM"] = "1"
    environment["GIT_CONFIG_GLOBAL"] = "/dev/null"
    return try runProcess(
        "/usr/bin/git", ["-c", "credential.helper=keychain-cli"] + arguments, stdin: input.map { Data($0.utf8) },
        environment: environment)
}

/// A directory holding `git-credential-keychain-cli`, a symbolic link to the binary under test.
public let gitHelperDirectory = helperLinkDirectory("git-credential-keychain-cli")

/// A new directory holding `name`, a symbolic link to the binary under test (which dispatches on
/// its name), removed when the test process exits.
func helperLinkDirectory(_ name: String) -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-\(name)-\(UUID().uuidString)")
    removeAtExit(directory.path)
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try? FileManager.default.createSymbolicLink(
        atPath: directory.appendingPathComponent(name).path, withDestinationPath: keychainCLIPath)
    return directory.path
}

/// `key=value` lines to a blank line, as git-credential(1) reads them.
public func credentialLines(_ pairs: KeyValuePairs<String, String>) -> String {
    pairs.map { "\($0.key)=\($0.value)\n" }.joined() + "\n"
}

private let leftovers = NSLock()
nonisolated(unsafe) private var leftoverPaths: [String] = []

/// Removes `path` (a scratch directory) when the test process exits normally.
public func removeAtExit(_ path: String) {
    leftovers.withLock {
        if leftoverPaths.isEmpty {
            atexit {
                leftovers.withLock {
                    for path in leftoverPaths { try? FileManager.default.removeItem(atPath: path) }
                }
            }
        }
        leftoverPaths.append(path)
    }
}

/// Debian's git-credential-libsecret, built from the C source the `git` package ships (about a
/// second with gcc), once per test process.
public let libsecretGitHelper: Result<String, any Error> = Result {
    let directory = try ScratchDirectory("git-libsecret")
    removeAtExit(directory.url.path)
    let output = directory.path("git-credential-libsecret")
    let flags = try runProcess(
        "/usr/bin/pkg-config", ["--cflags", "--libs", "libsecret-1", "glib-2.0"], environment: ["PATH": "/usr/bin:/bin"]
    )
    let build = try runProcess(
        "/usr/bin/gcc",
        ["-O2", "-o", output, "/usr/share/doc/git/contrib/credential/libsecret/git-credential-libsecret.c"]
            + flags.stdoutText.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            .filter { !$0.isEmpty },
        environment: ["PATH": "/usr/bin:/bin"])
    guard build.status == 0 else { throw FixtureFailed(detail: "gcc: \(build.stderr)") }
    return output
}
