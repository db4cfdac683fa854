import Foundation
import Glibc
import KeychainCore
import TestSupport
import Testing

/// keychain-cli opens the session bus socket itself (one write of authentication, Hello not
/// waited for) where the address names a Unix socket, and leaves other addresses to GIO.
@Suite("The session bus connection", .keyringSession)
struct SessionBusTests {
    private var session: KeyringSession { KeyringSession.current! }

    private func get(_ key: String, address: String, timeout: String = "5") throws -> ProcessResult {
        try cli(["--timeout", timeout, "get", key], extra: ["DBUS_SESSION_BUS_ADDRESS": address])
    }

    @Test func everyFormOfTheAddressReachesTheSameKeyring() throws {
        #expect(try cli(["set", "bus-form"], input: "over the bus").status == 0)
        let address = session.busAddress
        let guid = try #require(address.firstRange(of: /guid=[0-9a-f]+/)).lowerBound
        for form in [
            address,
            // Escaped bytes, as an address may carry them.
            address.replacing("/", with: "%2f"),
            // A list: the first socket is gone, so GIO's connection tries the next.
            "unix:path=/nonexistent/keychain-cli-bus;" + address,
            // A GUID other than the bus's: not ours to connect to; GIO's connection (which does not
            // compare GUIDs) takes the address.
            String(address[..<guid]) + "guid=00000000000000000000000000000000",
        ] {
            let result = try get("bus-form", address: form)
            #expect(result.status == 0, "\(form): \(result.stderr)")
            #expect(result.stdoutText == "over the bus", "\(form)")
        }
    }

    /// A socket that accepts connections but never answers (a hung bus): the authentication is
    /// bounded by --timeout like every other wait, and exits 75.
    @Test func aBusThatNeverAnswersItsAuthenticationTimesOutWithExit75() throws {
        let directory = try ScratchDirectory("silent-bus")
        defer { directory.remove() }
        let path = directory.path("bus")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        let bound = withUnixSocketAddress(Array(path.utf8)) { bind(listener, $0, $1) }
        #expect(bound == 0 && listen(listener, 8) == 0)
        for key in ["k", "missing"] {
            let started = Date()
            let result = try get(key, address: "unix:path=" + path, timeout: "1")
            let elapsed = Date().timeIntervalSince(started)
            #expect(result.status == 75, "\(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("keychain-cli: timed out after 1 s waiting for the Secret Service"))
            // (It waited its limit; the message says which: no upper bound on a loaded machine.)
            #expect(elapsed >= 1, "took \(elapsed) s")
        }
    }
}
