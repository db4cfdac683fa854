import Foundation

/// A git server on loopback for clone tests: `git http-backend` behind a small Python HTTP server
/// that asks for HTTP basic auth (one user and password), serving the bare repository
/// `repo.git` with one commit. It ends, with its files, when the test process is gone.
public final class GitHTTPServer: @unchecked Sendable {
    public let port: Int
    public let user: String
    public let password: String
    public var url: String { "http://127.0.0.1:\(port)/repo.git" }
    private let process: Process
    /// The server's input: the password's line, then nothing until this process ends (its end of
    /// file is the server's end).
    private let input = Pipe()

    /// One server for the test process.
    public static let shared: Result<GitHTTPServer, any Error> = Result {
        try GitHTTPServer(user: "ci-bot", password: "p4ss-\(UUID().uuidString.prefix(8))")
    }

    private static let script = #"""
        import base64, http.server, os, subprocess, sys, threading
        root, user, password = sys.argv[1], sys.argv[2], sys.stdin.readline().rstrip("\n")
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self): self.git()
            def do_POST(self): self.git()
            def log_message(self, *args): pass
            def git(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                           QUERY_STRING=query, REQUEST_METHOD=self.command, REMOTE_USER=user,
                           REMOTE_ADDR="127.0.0.1", CONTENT_TYPE=self.headers.get("Content-Type", ""),
                           CONTENT_LENGTH=str(len(body)),
                           HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                           GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True).stdout
                separator = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
                head, _, payload = out.partition(separator)
                status, headers = 200, []
                for line in head.replace(b"\r\n", b"\n").split(b"\n"):
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        def orphaned():
            sys.stdin.read()  # until the test process, which holds the other end, is gone
            os._exit(0)

        threading.Thread(target=orphaned, daemon=True).start()
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """#

    public init(user: String, password: String) throws {
        self.user = user
        self.password = password
        let directory = try ScratchDirectory("git-http")
        removeAtExit(directory.url.path)
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory.url.path, "GIT_CONFIG_NOSYSTEM": "1"]
        let work = directory.path("work")
        for arguments in [
            ["init", "-q", "--bare", directory.path("repo.git")], ["init", "-q", work],
            ["-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first"],
            ["-C", work, "push", "-q", directory.path("repo.git"), "HEAD:refs/heads/main"],
            ["-C", directory.path("repo.git"), "symbolic-ref", "HEAD", "refs/heads/main"],
        ] {
            let result = try runProcess("/usr/bin/git", arguments, environment: environment)
            guard result.status == 0 else { throw FixtureFailed(detail: "git \(arguments): \(result.stderr)") }
        }
        try Data(Self.script.utf8).write(to: URL(fileURLWithPath: directory.path("server.py")))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        // (The password on its input, not in its arguments, which any user may read.)
        process.arguments = [directory.path("server.py"), directory.url.path, user]
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data("\(password)\n".utf8))
        let line = output.fileHandleForReading.readLine()
        guard let port = line.flatMap({ Int($0) }) else { throw FixtureFailed(detail: "the git server did not start") }
        self.port = port
    }
}

extension FileHandle {
    /// One line (without its newline) read byte by byte, so nothing after it is consumed.
    fileprivate func readLine() -> String? {
        var bytes: [UInt8] = []
        while true {
            let byte = readData(ofLength: 1)
            guard let first = byte.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if first == 10 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(first)
        }
    }
}
