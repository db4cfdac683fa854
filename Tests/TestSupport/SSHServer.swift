import Foundation
import Synchronization

/// A real OpenSSH server (`/usr/sbin/sshd -D`) on a free loopback port, with a throwaway host key,
/// public-key login only, and an authorized_keys file of its own that tests add keys to; started
/// once per test process, stopped with it. It logs in the test process's own user.
public final class SSHServer: Sendable {
    public let port: Int
    public let directory: ScratchDirectory
    /// The host key's public line (`ssh-ed25519 AAAA…`).
    public let hostKey: String
    private let process: ChildProcess

    /// The one server of this test process, started on first use.
    public static let shared: Result<SSHServer, any Error> = Result { try SSHServer() }

    public var authorizedKeys: String { directory.path("authorized_keys") }
    public var user: String { NSUserName() }

    private init() throws {
        directory = try ScratchDirectory("sshd")
        port = try freePort()
        let hostKeyFile = directory.path("host_ed25519")
        let keygen = try runProcess(
            "/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", hostKeyFile], environment: [:])
        guard keygen.status == 0 else { throw SessionError("ssh-keygen: \(keygen.stderr)") }
        hostKey = try String(contentsOfFile: hostKeyFile + ".pub", encoding: .utf8)
            .split(separator: " ").prefix(2).joined(separator: " ")
        _ = FileManager.default.createFile(atPath: directory.path("authorized_keys"), contents: Data())
        // Root's sshd separates privileges into this directory, which only its service makes.
        if geteuid() == 0 {
            try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        }
        let configuration = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(hostKeyFile)
            AuthorizedKeysFile \(directory.path("authorized_keys"))
            PidFile none
            UsePAM no
            StrictModes no
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            LogLevel VERBOSE
            """
        try configuration.write(toFile: directory.path("sshd_config"), atomically: true, encoding: .utf8)
        process = try startUntilTestsEnd(
            ["/usr/sbin/sshd", "-D", "-e", "-f", directory.path("sshd_config")], directory: directory,
            environment: ["PATH": "/usr/bin:/bin"])
        let port = port
        let listening = eventually(timeout: 30, interval: 0.05) {
            let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(probe) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        guard listening else { throw SessionError("sshd did not listen on \(port): \(log)") }
    }

    /// What sshd logged.
    public var log: String { (try? String(contentsOfFile: directory.path("log"), encoding: .utf8)) ?? "" }

    /// Lets `publicKeyLine` log in (appended in one write: tests add keys at once).
    public func authorize(_ publicKeyLine: String) throws {
        let fd = open(authorizedKeys, O_WRONLY | O_APPEND)
        guard fd >= 0 else { throw SessionError("cannot open authorized_keys") }
        defer { close(fd) }
        let line = Array((publicKeyLine.trimmingCharacters(in: .whitespacesAndNewlines) + "\n").utf8)
        guard write(fd, line, line.count) == line.count else { throw SessionError("cannot append to authorized_keys") }
    }

    /// The arguments of an `ssh` that logs in here and runs `command`, with no key of its own
    /// (only the agent's), no configuration and no known hosts: `ssh` then the arguments.
    public func sshArguments(_ command: String) -> [String] {
        [
            "-F", "/dev/null", "-o", "IdentitiesOnly=no", "-o", "IdentityFile=/dev/null/none", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-p", "\(port)", "\(user)@127.0.0.1", command,
        ]
    }
}
