import Foundation
import TestSupport

/// The test plugin, `Tests/plugins/age-plugin-kctest` (written from the spec), and the
/// environments that find it.
enum KCTest {
    static let directory = packageRoot.appendingPathComponent("Tests/plugins").path

    /// PATH with the plugin's directory (`withPlugin`) or without it.
    static func environment(_ scratch: ScratchDirectory, withPlugin: Bool = true) -> [String: String] {
        [
            "PATH": (withPlugin ? "\(directory):" : "") + "/usr/bin:/bin", "HOME": scratch.path("home"),
            "KCTEST_LOG": scratch.path("plugin.log"),
        ]
    }

    /// A new key of the plugin: its identity file and its recipient. `mode` says how the identity
    /// behaves (n normal, a PIN, p public value, c confirmation, f error, e exit 3, h hang, x flood),
    /// `recipientMode` how the recipient does.
    static func key(_ mode: String, recipientMode: String? = nil, in scratch: ScratchDirectory, name: String) throws
        -> (identity: String, recipient: String)
    {
        let made = try runProcess(
            "\(directory)/age-plugin-kctest", ["--generate", mode, recipientMode ?? mode],
            environment: environment(scratch))
        let path = scratch.path(name)
        try made.stdout.write(to: URL(fileURLWithPath: path))
        let recipient = made.stdoutText.split(separator: "\n")[0].replacingOccurrences(of: "# recipient: ", with: "")
        return (path, recipient)
    }

    /// The sessions the plugin logged: (state machine, pid, recipients or identities, file keys or
    /// stanzas).
    static func sessions(_ scratch: ScratchDirectory) -> [(machine: String, pid: Int32, first: Int, second: Int)] {
        let text = (try? String(contentsOfFile: scratch.path("plugin.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            return (String(fields[0]), Int32(fields[1])!, Int(fields[2])!, Int(fields[3])!)
        }
    }

    /// An X25519 identity from age-keygen, and its recipient.
    static func x25519(in scratch: ScratchDirectory, name: String) throws -> (identity: String, recipient: String) {
        let path = scratch.path(name)
        _ = try runProcess("/usr/bin/age-keygen", ["-o", path], environment: ["PATH": "/usr/bin:/bin"])
        let recipient = try runProcess("/usr/bin/age-keygen", ["-y", path], environment: ["PATH": "/usr/bin:/bin"])
        return (path, recipient.stdoutText.trimmingCharacters(in: .newlines))
    }

    /// Stock age (1.1.1) with the plugin in PATH.
    static func age(_ arguments: [String], _ scratch: ScratchDirectory) throws -> ProcessResult {
        try runProcess("/usr/bin/age", arguments, environment: environment(scratch))
    }

    /// keychain-cli on `vault` (a file or a tree) with `identity`, the plugin in PATH (or not).
    static func cli(
        _ arguments: [String], vault: String, identity: String? = nil, stdin: String? = nil,
        _ scratch: ScratchDirectory, withPlugin: Bool = true
    ) throws -> ProcessResult {
        var extra = environment(scratch, withPlugin: withPlugin)
        extra["KEYCHAIN_BACKEND"] = "vault"
        extra["KEYCHAIN_VAULT"] = vault
        if let identity { extra["KEYCHAIN_IDENTITY"] = identity }
        return try TestSupport.cli(arguments, stdin: stdin.map { Data($0.utf8) }, session: nil, extra: extra)
    }

    /// keychain-cli at a terminal (expect), answering `answer` each time it shows `prompt`.
    static func atTerminal(_ arguments: [String], prompt: String, answer: String, _ scratch: ScratchDirectory) throws
        -> ProcessResult
    {
        var environment = cliEnvironment(session: nil).merging(environment(scratch)) { $1 }
        environment["TERM"] = "dumb"
        let quoted = ([keychainCLIPath] + arguments).map { "{\($0)}" }.joined(separator: " ")
        return try runProcess(
            "/usr/bin/expect",
            [
                "-c",
                """
                set timeout 20
                spawn \(quoted)
                expect {
                    -ex {\(prompt)} { send "\(answer)\\r"; exp_continue }
                    eof
                }
                catch wait status
                exit [lindex $status 3]
                """,
            ], environment: environment)
    }
}
