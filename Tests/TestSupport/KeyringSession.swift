import Foundation
import Testing

/// A private D-Bus session bus with (optionally) a gnome-keyring-daemon of its own, in a
/// throwaway HOME: the real Secret Service, isolated from the desktop, started and stopped by
/// the tests themselves.
///
/// The bus has no service activation, so nothing but the daemon started here can own
/// `org.freedesktop.secrets`; the daemon returns before it owns the name, so ``start(_:)``
/// polls `NameHasOwner` until it does (otherwise a client could race it).
public final class KeyringSession: @unchecked Sendable {
    public enum Provider: Sendable {
        /// gnome-keyring with an unlocked "login" collection (the default alias).
        case unlockedLogin
        /// gnome-keyring started without --unlock: no login collection, no default alias.
        case noLoginCollection
        /// A bus with no Secret Service provider at all.
        case none
    }

    /// The session the current test runs in (set by ``KeyringSessionTrait``).
    @TaskLocal public static var current: KeyringSession?

    public let directory: URL
    public let busAddress: String
    private let bus: ChildProcess
    private var daemon: ChildProcess?
    /// The current daemon's stderr (daemon-N.log in ``directory``).
    private var daemonLog: URL?
    /// How long ``stop()`` lets each process end on SIGTERM before SIGKILL.
    private let grace: Double

    /// The environment for a child process that should use this session and nothing else.
    public var environment: [String: String] {
        [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": directory.path,
            "XDG_RUNTIME_DIR": directory.appendingPathComponent("run").path,
            "XDG_DATA_HOME": directory.appendingPathComponent("data").path,
            "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path,
            "DBUS_SESSION_BUS_ADDRESS": busAddress,
            "LANG": "C.UTF-8",
        ]
    }

    public static func start(_ provider: Provider = .unlockedLogin) throws -> KeyringSession {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-keyring-\(UUID().uuidString)")
        for sub in ["run", "data", "config"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let config = directory.appendingPathComponent("bus.conf")
        try privateBusConfiguration(listeningIn: directory.path).write(to: config, atomically: true, encoding: .utf8)

        // Its address goes to a file (no pipe to keep open); its stderr to bus.log, for ``diagnosis()``.
        let addressFile = directory.appendingPathComponent("bus.address").path
        let bus = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--config-file=\(config.path)", "--nofork", "--print-address=1"],
            environment: ProcessInfo.processInfo.environment,
            files: [
                (0, "/dev/null", O_RDONLY), (1, addressFile, O_WRONLY | O_CREAT | O_TRUNC),
                (2, directory.appendingPathComponent("bus.log").path, O_WRONLY | O_CREAT | O_TRUNC),
            ])
        var address = ""
        let printed = eventually(timeout: 30, interval: 0.005) {
            address = (try? String(contentsOfFile: addressFile, encoding: .utf8)) ?? ""
            return address.hasSuffix("\n") || !bus.isRunning
        }
        guard printed, address.hasSuffix("\n") else {
            bus.stop()
            try? FileManager.default.removeItem(at: directory)
            throw SessionError("dbus-daemon did not print its address: it \(bus.ending ?? "ran on")")
        }
        address = address.trimmingCharacters(in: .whitespacesAndNewlines)

        let session = KeyringSession(directory: directory, busAddress: address, bus: bus, daemon: nil)
        if provider != .none {
            try session.startDaemon(unlocked: provider == .unlockedLogin)
        }
        return session
    }

    init(directory: URL, busAddress: String, bus: ChildProcess, daemon: ChildProcess?, grace: Double = 3) {
        self.grace = grace
        self.directory = directory
        self.busAddress = busAddress
        self.bus = bus
        self.daemon = daemon
    }

    /// Starts gnome-keyring-daemon on the session's bus and waits until it owns
    /// org.freedesktop.secrets; a daemon that has not within 30 s is killed and started afresh,
    /// three times at most.
    ///
    /// On a loaded two-core CI machine one dbus-send once took over 10 s to answer, and once a
    /// daemon never took its name in 45 s while another started at the same time did: a second
    /// daemon is cheaper than a failed suite. Its own stderr is kept, for the error.
    private func startDaemon(unlocked: Bool) throws {
        var problems: [String] = []
        for attempt in 1...3 {
            let log = directory.appendingPathComponent("daemon-\(attempt).log")
            daemonLog = log
            daemon = try launchDaemon(unlocked: unlocked, log: log)
            guard let problem = waitForSecretService(seconds: 30) else { return }
            let said = tail(ofFile: log.path, 300)
            problems.append("attempt \(attempt): \(problem)\(said.isEmpty ? "" : " (it said: \(said))")")
            daemon?.signal(SIGKILL)
            daemon?.wait(timeout: 60)
        }
        stop()
        throw SessionError(
            "gnome-keyring-daemon did not own org.freedesktop.secrets: \(problems.joined(separator: "; "))")
    }

    /// Starts gnome-keyring-daemon, its stderr in `log` and, when `unlocked`, the login
    /// password on its stdin (from a file: it reads to the end).
    private func launchDaemon(unlocked: Bool, log: URL) throws -> ChildProcess {
        var environment = ProcessInfo.processInfo.environment.filter {
            !$0.key.hasPrefix("DBUS_") && $0.key != "DISPLAY"
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        environment["HOME"] = directory.path
        environment["XDG_RUNTIME_DIR"] = directory.appendingPathComponent("run").path
        environment["XDG_DATA_HOME"] = directory.appendingPathComponent("data").path
        let password = directory.appendingPathComponent("password").path
        guard FileManager.default.createFile(atPath: password, contents: Data((unlocked ? "test-password" : "").utf8))
        else { throw SessionError("could not write \(password)") }
        return try ChildProcess(
            "/usr/bin/gnome-keyring-daemon", ["--foreground", "--components=secrets"] + (unlocked ? ["--unlock"] : []),
            environment: environment,
            files: [(0, password, O_RDONLY), (1, "/dev/null", O_WRONLY), (2, log.path, O_WRONLY | O_CREAT | O_TRUNC)])
    }

    /// Polls org.freedesktop.DBus.NameHasOwner until the daemon owns org.freedesktop.secrets:
    /// nil when it does, else what went wrong. A probe that times out is asked again.
    private func waitForSecretService(seconds: Double) -> String? {
        var problem: String?
        var lastProblem = "it never did in \(Int(seconds)) s"
        let owned = eventually(timeout: seconds) {
            do {
                let reply = try dbusSend([
                    "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                    "string:org.freedesktop.secrets",
                ])
                if reply.contains("boolean true") { return true }
            } catch {
                lastProblem = "\(error)"
            }
            problem = diagnosis()
            return problem != nil
        }
        return owned ? problem : lastProblem
    }

    /// Freezes the keyring daemon (SIGSTOP) while it owns its name: the bus accepts calls to it
    /// and nothing ever answers, like a prompt nobody can see.
    public func freezeDaemon() {
        daemon?.signal(SIGSTOP)
    }

    /// Kills the keyring daemon (SIGKILL), as a crash would; it is reaped by ``stop()`` only, so
    /// ``diagnosis()`` can tell how it ended.
    public func killDaemon() {
        daemon?.signal(SIGKILL)
    }

    /// The keyring daemon's process id, for a script that kills it as a crash would: it stays the
    /// daemon's (a zombie's, once it ends) until ``stop()`` or ``diagnosis()`` reaps it.
    public var daemonProcessIdentifier: Int32? { daemon?.pid }

    /// Nil while the bus and the keyring daemon run; else which one ended, how (an exit status or
    /// a signal) and the end of its stderr: for the message of a test that lost its Secret Service.
    public func diagnosis() -> String? {
        var problems: [String] = []
        if let ending = bus.ending {
            problems.append(
                "\(bus.name) \(ending); its stderr ends: \(tail(ofFile: directory.appendingPathComponent("bus.log").path))"
            )
        }
        if let daemon, let ending = daemon.ending {
            problems.append(
                "\(daemon.name) \(ending); its stderr ends: \(daemonLog.map { tail(ofFile: $0.path) } ?? "")")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "\n")
    }

    /// Locks the login collection, as a screen lock or `seahorse` would.
    public func lockLogin() throws {
        _ = try dbusSend([
            "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
            "array:objpath:/org/freedesktop/secrets/collection/login",
        ])
    }

    /// Unlocks the login collection with its password, without a prompter, through
    /// gnome-keyring's own `InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword` (a
    /// struct argument, which dbus-send cannot send: python's jeepney, which python3-keyring brings).
    public func unlockLogin() throws {
        let script = """
            from jeepney import DBusAddress, new_method_call
            from jeepney.io.blocking import open_dbus_connection
            bus = open_dbus_connection(bus="SESSION")
            def call(interface, method, signature, body):
                address = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface=interface)
                reply = bus.send_and_get_reply(new_method_call(address, method, signature, body))
                if reply.header.message_type.name != "method_return": raise SystemExit(str(reply.body))
                return reply.body
            session = call("org.freedesktop.Secret.Service", "OpenSession", "sv", ("plain", ("s", "")))[1]
            call("org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface", "UnlockWithMasterPassword", "o(oayays)",
                 ("/org/freedesktop/secrets/collection/login", (session, b"", b"test-password", "text/plain")))
            """
        let result = try runProcess("/usr/bin/python3", ["-c", script], environment: environment, timeout: 20)
        guard result.status == 0 else { throw SessionError("unlocking the login collection: \(result.stderr)") }
    }

    @discardableResult
    public func dbusSend(_ arguments: [String]) throws -> String {
        let result = try runProcess(
            "/usr/bin/dbus-send", ["--session", "--print-reply"] + arguments, environment: environment, timeout: 10)
        return result.stdoutText
    }

    /// Kills the bus alone: its clients' connections hang up, with no word from it first (no
    /// NameOwnerChanged for the names it held).
    public func killBus() { bus.killAndWait() }

    public func stop() {
        // A daemon blocked on an unlock prompt ignores SIGTERM: give it `grace`, then SIGKILL.
        for process in [daemon, bus].compactMap({ $0 }) { process.stop(grace: grace) }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

extension KeyringSession {
    /// Records an issue (on the current test or suite) saying how the session's bus or daemon
    /// ended, if one did: a suite whose gnome-keyring quit midway says why, once.
    public func recordIfItDied(sourceLocation: SourceLocation = #_sourceLocation) {
        if let diagnosis = diagnosis() {
            Issue.record(
                "the suite's Secret Service session ended before the suite did: \(diagnosis)",
                sourceLocation: sourceLocation)
        }
    }
}

public struct SessionError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a suite (once, not per test) inside a fresh ``KeyringSession``, available as
/// ``KeyringSession/current``, and tears it down afterwards.
public struct KeyringSessionTrait: SuiteTrait, TestScoping {
    /// Starts the suite's session: a gnome-keyring unless told otherwise.
    var start: @Sendable () throws -> KeyringSession = { try KeyringSession.start() }

    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let session = try start()
        defer { session.stop() }
        try await KeyringSession.$current.withValue(session) {
            try await function()
        }
        session.recordIfItDied()
    }
}

extension Trait where Self == KeyringSessionTrait {
    /// A private gnome-keyring for the whole suite.
    public static var keyringSession: Self { KeyringSessionTrait() }
}

/// A private session bus's configuration: listening in `directory`, no service activation (nothing
/// else can take a name), every name ownable, and eavesdropping allowed (the tests that watch what
/// a client sends).
public func privateBusConfiguration(listeningIn directory: String) -> String {
    """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <busconfig>
      <type>session</type>
      <listen>unix:dir=\(directory)</listen>
      <policy context="default">
        <allow send_destination="*" eavesdrop="true"/>
        <allow eavesdrop="true"/>
        <allow own="*"/>
      </policy>
    </busconfig>
    """
}
