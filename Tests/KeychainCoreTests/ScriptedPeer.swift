import Foundation
import TestSupport
import Testing

@testable import KeychainDBus
@testable import KeychainSecretService
@testable import KeychainStore

/// The ways the Secret Service client reaches the service, each a test's argument.
enum Transport: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// ``FakeBus``, in process.
    case fake
    /// Our own D-Bus wire (``BusWire``) to scripted_service.py on a private bus.
    case wire
    /// GDBus (``GDBusCalls``, within a ``BoundedOperation``) to the same.
    case gdbus

    var testDescription: String { rawValue }
}

/// A Secret Service playing a ``BusScenario``, reached by one ``Transport``: the ``FakeBus``, or
/// scripted_service.py on a bus of its own (``ScriptedService``).
final class ScriptedPeer {
    /// What a time-out says the client was doing.
    static let operation = "the scripted Secret Service to answer"

    private let fake: FakeBus?
    private let service: ScriptedService?
    /// Whether ``service`` is reached by GDBus (else by our wire).
    private let gdbus: Bool

    /// Runs `body` with a peer playing `scenario` over `transport`, stopped on the way out.
    static func playing<T>(_ scenario: BusScenario, over transport: Transport, _ body: (ScriptedPeer) throws -> T)
        throws -> T
    {
        let peer = try ScriptedPeer(scenario, over: transport)
        defer { peer.stop() }
        return try body(peer)
    }

    private init(_ scenario: BusScenario, over transport: Transport) throws {
        fake = transport == .fake ? FakeBus(scenario, operation: Self.operation) : nil
        service = transport == .fake ? nil : try ScriptedService.start(scenario)
        gdbus = transport == .gdbus
    }

    /// Runs `body` on a connection to the service whose every wait lasts at most `seconds`; what
    /// it throws is a KeychainError, as the client's callers see it (a ``DBusError`` through
    /// ``KeychainError/init(_:)``).
    func run<T>(seconds: Double = 30, _ body: (any BusConnection) throws -> T) throws(KeychainError) -> T {
        do {
            if let fake {
                fake.seconds = seconds
                return try body(fake)
            }
            guard let service else { throw KeychainError.backendFailure(detail: "no peer") }
            if gdbus {
                return try GDBusCalls.onBus(
                    at: service.address, Self.operation, seconds: seconds, meaning: { KeychainError($0) }, body)
            }
            return try body(service.wire(operation: Self.operation, seconds: seconds))
        } catch let error as KeychainError {
            throw error
        } catch let error as DBusError {
            throw KeychainError(error)
        } catch {
            throw .backendFailure(detail: "\(error)")
        }
    }

    /// Every call and signal the service got, in the order it got them.
    func events() throws -> [BusEvent] {
        if let fake { return fake.events }
        return try service?.events() ?? []
    }

    private func stop() { service?.stop() }
}

/// scripted_service.py playing a scenario on a private `dbus-daemon` of its own, both started as
/// children of the test and ended by ``stop()``.
final class ScriptedService {
    let address: String
    private let directory: URL
    private let bus: ChildProcess
    private let service: ChildProcess

    private init(address: String, directory: URL, bus: ChildProcess, service: ChildProcess) {
        (self.address, self.directory, self.bus, self.service) = (address, directory, bus, service)
    }

    /// Starts the bus, then the service, and returns once the service says it is ready: it owns
    /// the Secret Service's name and hears the signals and Pings it logs.
    static func start(_ scenario: BusScenario) throws -> ScriptedService {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kc-scripted-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func file(_ name: String) -> String { directory.appendingPathComponent(name).path }
        // No service activation (nothing else can take the name); eavesdropping allowed (the Pings).
        try privateBusConfiguration(listeningIn: directory.path).write(
            toFile: file("bus.conf"), atomically: true, encoding: .utf8)
        try scenario.json.write(to: URL(fileURLWithPath: file("scenario.json")))
        let bus = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--config-file=\(file("bus.conf"))", "--nofork", "--print-address=1"],
            environment: ProcessInfo.processInfo.environment,
            files: [
                (0, "/dev/null", O_RDONLY), (1, file("address"), O_WRONLY | O_CREAT),
                (2, file("bus.log"), O_WRONLY | O_CREAT),
            ])
        /// The error, with what `process` said in `log`; the directory is removed.
        func failed(_ what: String, _ process: ChildProcess, log: String) -> SessionError {
            defer { try? FileManager.default.removeItem(at: directory) }
            return SessionError("\(what): it \(process.ending ?? "ran on"): \(tail(ofFile: file(log), 500))")
        }
        guard let address = line(of: file("address"), from: bus) else {
            defer { bus.stop() }
            throw failed("dbus-daemon printed no address", bus, log: "bus.log")
        }
        let service: ChildProcess
        do {
            service = try ChildProcess(
                "/usr/bin/python3",
                [
                    clientScripts + "/scripted_service.py", address, file("scenario.json"),
                    SecretServiceConnection.busName,
                ],
                environment: ProcessInfo.processInfo.environment,
                files: [
                    (0, "/dev/null", O_RDONLY), (1, file("ready"), O_WRONLY | O_CREAT),
                    (2, file("service.log"), O_WRONLY | O_CREAT),
                ])
        } catch {
            bus.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        guard line(of: file("ready"), from: service) == "ready" else {
            defer {
                service.stop()
                bus.stop()
            }
            throw failed("scripted_service.py did not start", service, log: "service.log")
        }
        return ScriptedService(address: address, directory: directory, bus: bus, service: service)
    }

    /// The first line `process` writes to `path`, once it is whole; nil when it ends first or
    /// writes none within 30 seconds (a loaded machine).
    private static func line(of path: String, from process: ChildProcess) -> String? {
        var text = ""
        eventually(timeout: 30, interval: 0.005) {
            text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return text.contains("\n") || !process.isRunning
        }
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().first.map(String.init)
    }

    /// A connection of our own wire to the bus, known to the bus (its Hello answered) before it is
    /// handed out: the service then counts it among the clients ``events()`` waits for.
    func wire(operation: String, seconds: Double) throws -> BusWire {
        guard let endpoint = SessionBusSocket.Endpoint(address),
            let wire = BusWire(endpoint, operation: operation, seconds: 30)
        else { throw SessionError("cannot connect to \(address)") }
        // org.freedesktop.DBus.GetId() -> (s id): sent behind the Hello, answered after it.
        _ = try wire.answer(
            wire.send("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", []))
        wire.seconds = seconds
        return wire
    }

    /// What the service logged, asked of it on a connection of its own. It answers once every
    /// other client has left the bus (a test's wire is closed when released, a GDBus connection
    /// by ``GDBusCalls/onBus(at:_:seconds:meaning:_:)``), and the bus delivers all a client sent
    /// before it says the client left: everything a test sent is in it, answered or not.
    func events() throws -> [BusEvent] {
        let wire = try wire(operation: "the scripted Secret Service's log", seconds: 30)
        let answer = try wire.answer(
            wire.send(SecretServiceConnection.busName, "/", "org.keychain_cli.Test.Scripted", "Log", []))
        guard case .values(let values) = answer, values.count == 1, case .string(let json) = values[0] else {
            throw SessionError("the scripted service answered Log with \(answer)")
        }
        return try JSONDecoder().decode([BusEvent].self, from: Data(json.utf8))
    }

    func stop() {
        service.stop()
        bus.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
