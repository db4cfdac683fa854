import Foundation
import Glibc

/// A TCP proxy in front of an OpenBao server that stalls while a file exists (Tests/clients/
/// stall_proxy.py): what a client of it sent meanwhile is never answered; connections idle
/// meanwhile, and new ones once the file is gone, are served. It tells of each connection it
/// holds, and of its client giving up on it, in lines ("held", "given up") appended to the file's
/// path + ".held", which a test may make a FIFO to wait on.
public final class StallProxy {
    /// The proxy's address, for BAO_ADDR.
    public let address: String
    private let process: ChildProcess

    /// Starts it for `server`, with its port file in `directory`; it stalls while
    /// `directory/stall` exists.
    public init(server: OpenBaoServer, directory: ScratchDirectory) throws {
        guard let upstream = URLComponents(string: server.address)?.port else {
            throw SessionError("no port in \(server.address)")
        }
        // A ChildProcess: no descriptor of the test's for it to hold, and a pid that stays its own
        // until it is reaped here.
        let process = try ChildProcess(
            "/usr/bin/python3",
            ["\(clientScripts)/stall_proxy.py", directory.path("port"), String(upstream), directory.path("stall")],
            environment: ["PATH": "/usr/bin:/bin"],
            files: [(0, "/dev/null", O_RDONLY), (1, "/dev/null", O_WRONLY), (2, "/dev/null", O_WRONLY)])
        var port: String?
        eventually(timeout: 10, interval: 0.05) {
            port = try? String(contentsOfFile: directory.path("port"), encoding: .utf8)
            return port != nil || !process.isRunning
        }
        self.process = process
        guard let port else {
            process.killAndWait()
            throw SessionError("the stall proxy wrote no port: it \(process.ending ?? "ran on")")
        }
        address = "http://127.0.0.1:\(port)"
    }

    public func stop() { process.killAndWait() }

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
