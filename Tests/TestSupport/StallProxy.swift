import Foundation
import Glibc

/// A TCP proxy in front of an OpenBao server that stalls while a file exists (Tests/clients/
/// stall_proxy.py): what a client of it sent meanwhile is never answered; connections idle
/// meanwhile, and new ones once the file is gone, are served.
public final class StallProxy {
    /// The proxy's address, for BAO_ADDR.
    public let address: String
    private let pid: Int32

    /// Starts it for `server`, with its port file in `directory`; it stalls while
    /// `directory/stall` exists.
    public init(server: OpenBaoServer, directory: ScratchDirectory) throws {
        guard let upstream = URLComponents(string: server.address)?.port else {
            throw SessionError("no port in \(server.address)")
        }
        // Started by a shell that leaves it running: a Process of Foundation's would wait, at its
        // end, for every process that inherited its descriptors.
        let started = try runProcess(
            "/bin/sh",
            [
                "-c", "python3 \"$0\" \"$1\" \"$2\" \"$3\" </dev/null >/dev/null 2>&1 & echo $!",
                "\(clientScripts)/stall_proxy.py", directory.path("port"), String(upstream), directory.path("stall"),
            ], environment: ["PATH": "/usr/bin:/bin"])
        guard let pid = Int32(started.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw SessionError("the stall proxy did not start: \(started.stderr)")
        }
        self.pid = pid
        for _ in 0..<200 {
            if let port = try? String(contentsOfFile: directory.path("port"), encoding: .utf8) {
                address = "http://127.0.0.1:\(port)"
                return
            }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        throw SessionError("the stall proxy wrote no port")
    }

    public func stop() { kill(pid, SIGKILL) }

    /// Runs `body` with every keychain-cli it starts on a new KV mount of the shared OpenBao
    /// server, and a proxy to that server: `body` gets the server, the mount, and the environment
    /// that makes a keychain-cli go through the proxy (BAO_ADDR) and gives the file that stalls it
    /// ($STALL).
    public static func withMount(_ body: (OpenBaoServer, String, [String: String]) throws -> Void) throws {
        let server = try OpenBaoServer.shared.get()
        let mount = "sp" + UUID().uuidString.prefix(10).lowercased().replacing("-", with: "")
        try server.enableKV(mount)
        let directory = try ScratchDirectory("stall")
        defer { directory.remove() }
        let proxy = try StallProxy(server: server, directory: directory)
        defer { proxy.stop() }
        try CLIBackend.$overrides.withValue(CLIBackend.openBaoEnvironment(server, mount: mount)) {
            try body(server, mount, ["BAO_ADDR": proxy.address, "STALL": directory.path("stall")])
        }
    }
}
