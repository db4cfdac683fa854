import Foundation
import TestSupport
import Testing

/// serve when OpenBao stalls under its watcher, and when serve itself is killed.
@Suite("serve: a stalled OpenBao, a killed serve")
struct ServeStallAndKillTests {
    /// A request of the watcher to an OpenBao that stopped answering (held for the whole time
    /// limit, here 30 s) does not hold up a client's CreateItem, which goes out on a connection
    /// of its own: before, the two shared one, and the write waited out the watcher's request.
    @Test func aStalledWatcherRequestDoesNotHoldUpAWrite() throws {
        let server = try OpenBaoServer.shared.get()
        let mount = "st" + UUID().uuidString.prefix(10).lowercased().replacing("-", with: "")
        try server.enableKV(mount)
        let directory = try ScratchDirectory("stall")
        defer { directory.remove() }
        let upstream = try #require(URLComponents(string: server.address)?.port)
        // Started by a shell that leaves it running: a Process of Foundation's would wait, at its
        // end, for every process that inherited its descriptors (serve's, here).
        let started = try runProcess(
            "/bin/sh",
            [
                "-c", "python3 \"$0\" \"$1\" \"$2\" \"$3\" </dev/null >/dev/null 2>&1 & echo $!",
                "\(clientScripts)/stall_proxy.py", directory.path("port"), String(upstream), directory.path("stall"),
            ], environment: ["PATH": "/usr/bin:/bin"])
        let proxy = try #require(Int32(started.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { kill(proxy, SIGKILL) }
        var port: String?
        for _ in 0..<100 where port == nil {
            port = try? String(contentsOfFile: directory.path("port"), encoding: .utf8)
            if port == nil { usleep(50_000) }
        }
        let address = "http://127.0.0.1:\(try #require(port))"
        try CLIBackend.$overrides.withValue(CLIBackend.openBaoEnvironment(server, mount: mount)) {
            let result = try served(
                """
                sleep 1; touch "$STALL"; sleep 2.5; rm "$STALL"
                python3 -c 'from ssclient import *
                c = Client()
                try:
                    c.create({"service": "st", "username": "u"}, "v", replace=True); print("created")
                except Exception as error:
                    print(repr(error))'
                """, extra: ["BAO_ADDR": address, "KEYCHAIN_TIMEOUT": "30", "STALL": directory.path("stall")],
                timeout: 120)
            #expect(result.stdoutText == "created\n", "\(result.stderr)")
        }
        #expect(try server.bao(["kv", "get", "-field=u", "\(mount)/st"]).stdoutText == "v")
    }

    /// serve -- COMMAND killed with SIGKILL: its command gets SIGTERM (SIGKILL 5 s later if it
    /// ignores it) rather than run on without its bus, and the private bus's directory is removed.
    /// Before, the command ran on orphaned and an empty directory stayed behind.
    @Test(arguments: ["exit 0", ""])
    func aKilledServeTakesItsCommandAndBusDirectoryWithIt(onTerm: String) throws {
        try CLIBackend.withVault { _ in
            let directory = try ScratchDirectory("killed")
            defer { directory.remove() }
            let script = """
                "$K" serve -- sh -c 'trap "\(onTerm)" TERM; echo $$ > command; echo "$DBUS_SESSION_BUS_ADDRESS" > bus
                    while :; do sleep 0.1; done' &
                serve=$!
                for i in $(seq 100); do [ -s bus ] && break; sleep 0.1; done
                kill -9 $serve
                command=$(cat command); bus=$(sed 's/^unix:path=//; s/,.*//' bus)
                # Ended: gone, or a zombie its new parent has not reaped yet.
                running() { state=$(awk '{ print $3 }' /proc/$command/stat 2>/dev/null); [ -n "$state" ] && [ "$state" != Z ]; }
                for i in $(seq 100); do running || break; sleep 0.1; done
                running && echo "command alive" || echo "command ended"
                [ -e "$(dirname "$bus")" ] && echo "directory left" || echo "directory removed"
                running && kill -9 $command  # nothing left behind, whatever the outcome
                exit 0
                """
            var environment = cliEnvironment()
            environment["K"] = keychainCLIPath
            let result = try runProcess(
                "/bin/sh", ["-c", "cd \"\(directory.url.path)\" || exit 99\n\(script)"], environment: environment,
                timeout: 60)
            #expect(result.stdoutText == "command ended\ndirectory removed\n", "\(result.stderr)")
        }
    }
}
