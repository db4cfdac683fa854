import Testing

@testable import KeychainCore
@testable import KeychainDBus
@testable import KeychainSecretService

/// Which `$DBUS_SESSION_BUS_ADDRESS` values keychain-cli opens itself (a Unix socket by path or
/// abstract name), and which it leaves to GIO (nil).
@Suite("The session bus address: what SessionBusSocket opens itself")
struct SessionBusEndpointTests {
    private typealias Endpoint = SessionBusSocket.Endpoint

    @Test func aSocketPathWithItsGUID() throws {
        let endpoint = try #require(Endpoint("unix:path=/run/user/1000/bus,guid=0123456789abcdef0123456789abcdef"))
        #expect(endpoint.socketPath == Array("/run/user/1000/bus".utf8))
        #expect(endpoint.guid == "0123456789abcdef0123456789abcdef")
        #expect(Endpoint("unix:path=/run/user/1000/bus")?.guid == nil)
    }

    @Test func anAbstractNameStartsWithANulByte() throws {
        let endpoint = try #require(Endpoint("unix:abstract=/tmp/dbus-XYZ,guid=ab"))
        #expect(endpoint.socketPath == [0] + Array("/tmp/dbus-XYZ".utf8))
    }

    @Test func escapedBytesAreDecoded() throws {
        let escaped = Endpoint("unix:path=%2frun%2Fuser%2f1000%2fmy%20bus")
        #expect(escaped?.socketPath == Array("/run/user/1000/my bus".utf8))
        #expect(Endpoint("unix:path=/a%2")?.socketPath == nil, "a cut escape")
        #expect(Endpoint("unix:path=/a%zz")?.socketPath == nil, "not hex")
        #expect(Endpoint("unix:path=/a%00b") == nil, "a NUL inside a path")
    }

    @Test func onlyTheFirstOfSeveralAddressesIsTried() throws {
        let endpoint = try #require(Endpoint("unix:path=/first;unix:path=/second"))
        #expect(endpoint.socketPath == Array("/first".utf8))
        #expect(Endpoint("tcp:host=localhost,port=1234;unix:path=/second") == nil)
    }

    /// Other transports, keys for servers or for GIO to resolve, and malformed values: GIO's
    /// connection takes them (and reports what is wrong with them).
    @Test(arguments: [
        "", "tcp:host=127.0.0.1,port=4000", "unixexec:path=/bin/dbus-bridge", "autolaunch:",
        "unix:tmpdir=/tmp", "unix:dir=/tmp", "unix:runtime=yes", "unix:", "unix:path=", "unix:guid=ab",
        "unix:path=/a,path=/b", "unix:path=/a,abstract=b", "unix:path=/a,guid=1,guid=2", "unix:path",
        "unix:path=/a,noise=1", "unix:path=/" + String(repeating: "d", count: 107),
    ])
    func anythingElseIsLeftToGIO(address: String) {
        #expect(Endpoint(address) == nil)
    }

    @Test func thePathFillsSunPathWithRoomForItsNul() {
        #expect(Endpoint("unix:path=/" + String(repeating: "d", count: 106))?.socketPath.count == 107)
    }
}

/// The D-Bus layer says what went wrong on the bus in its own words; the Secret Service client
/// says, in one map, what each means to a store: a bus that refuses us or goes away is no session
/// bus, a stream out of step is a backend failure, a wait that ran out is a time-out.
@Suite("What each D-Bus failure means to the Secret Service client")
struct SecretServiceErrorMapTests {
    @Test func eachFailureOfTheBusIsItsCase() {
        #expect(KeychainError(DBusError.refused) == .noSessionBus(detail: "the session bus refused the authentication"))
        #expect(KeychainError(DBusError.closed) == .noSessionBus(detail: "the session bus closed the connection"))
        #expect(
            KeychainError(DBusError.malformed)
                == .backendFailure(detail: "the session bus sent a malformed D-Bus message"))
        #expect(
            KeychainError(DBusError.timedOut(operation: "return the secret", seconds: 3))
                == .timedOut(operation: "return the secret", seconds: 3))
        #expect(KeychainError(DBusError.failed("odd")) == .backendFailure(detail: "the Secret Service failed: odd"))
    }

    /// A service's own error text is shown in one line: its newlines, carriage returns and
    /// terminal escapes are escaped, whatever case it maps to.
    @Test func aServicesWordsStayOnOneLine() {
        let words = "line1\nline2 \u{1B}[31mRED\u{1B}[0m\rOVER"
        let escaped = "line1\\nline2 \\u{001B}[31mRED\\u{001B}[0m\\rOVER"
        let failed = KeychainError(
            remote: "org.freedesktop.DBus.Error.Failed", detail: words, operation: "list the items", seconds: 5)
        #expect(failed == .backendFailure(detail: "the Secret Service failed: " + escaped))
        let locked = KeychainError(
            remote: "org.freedesktop.Secret.Error.IsLocked", detail: words, operation: "list the items", seconds: 5)
        #expect(locked == .locked(detail: escaped))
    }
}
