import Foundation
import Testing

/// A headless X server (Xvfb) and a headless Wayland compositor (sway), for `--clip`: started
/// once for a suite (``Trait/displays``), stopped after it. As root, sway runs as nobody (it
/// refuses root), in a runtime directory of its own that root's clients can still reach.
public final class Displays: Sendable {
    /// DISPLAY of the X server.
    public let x11: String
    /// XDG_RUNTIME_DIR and WAYLAND_DISPLAY of the compositor.
    public let waylandRuntime: String
    public let wayland: String
    let directory: URL
    let processes: [ChildProcess]

    @TaskLocal public static var current: Displays?

    init(x11: String, waylandRuntime: String, wayland: String, directory: URL, processes: [ChildProcess]) {
        (self.x11, self.waylandRuntime, self.wayland) = (x11, waylandRuntime, wayland)
        (self.directory, self.processes) = (directory, processes)
    }

    /// The environment of a client of the X server (no Wayland).
    public var x11Environment: [String: String?] { ["DISPLAY": x11, "WAYLAND_DISPLAY": nil] }
    /// The environment of a client of the compositor (no X server).
    public var waylandEnvironment: [String: String?] {
        ["DISPLAY": nil, "WAYLAND_DISPLAY": wayland, "XDG_RUNTIME_DIR": waylandRuntime]
    }

    public static func start() throws -> Displays {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kc-displays-\(UUID().uuidString)")
        let runtime = directory.appendingPathComponent("wayland-run")
        // The compositor's user (nobody, under root) must be able to pass through the parent.
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try FileManager.default.createDirectory(
            at: runtime, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        var started: [ChildProcess] = []
        do {
            let numberFile = directory.appendingPathComponent("x11-display")
            let xvfb = try launch(
                "/bin/sh",
                ["-c", #"exec Xvfb -displayfd 3 -nolisten tcp -noreset -screen 0 640x480x24 3>"$0""#, numberFile.path],
                environment: [:], log: directory.appendingPathComponent("xvfb.log"))
            started.append(xvfb)
            let x11 = try waitFor("Xvfb", xvfb, directory.appendingPathComponent("xvfb.log")) {
                (try? String(contentsOf: numberFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                    .nilIfEmpty.map { ":" + $0 }
            }
            var command = ["/usr/bin/sway", "-c", "/dev/null"]
            if getuid() == 0 {
                chown(runtime.path, 65_534, 65_534)
                command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
            }
            let log = directory.appendingPathComponent("sway.log")
            let sway = try launch(
                command[0], Array(command.dropFirst()),
                environment: [
                    "XDG_RUNTIME_DIR": runtime.path, "HOME": runtime.path, "WLR_BACKENDS": "headless",
                    "WLR_LIBINPUT_NO_DEVICES": "1", "WLR_RENDERER": "pixman", "PATH": "/usr/bin:/bin",
                ], log: log)
            started.append(sway)
            let wayland = try waitFor("sway", sway, log) {
                (try? FileManager.default.contentsOfDirectory(atPath: runtime.path))?
                    .first { $0.hasPrefix("wayland-") && !$0.hasSuffix(".lock") }
            }
            return Displays(
                x11: x11, waylandRuntime: runtime.path, wayland: wayland, directory: directory, processes: started)
        } catch {
            for process in started { process.killAndWait() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// SIGKILL, to each only until it is reaped here (ChildProcess).
    public func stop() {
        for process in processes { process.killAndWait() }
        try? FileManager.default.removeItem(at: directory)
    }

    private static func launch(_ executable: String, _ arguments: [String], environment: [String: String], log: URL)
        throws -> ChildProcess
    {
        try ChildProcess(
            executable, arguments, environment: environment,
            files: [(0, "/dev/null", O_RDONLY), (1, log.path, O_WRONLY | O_CREAT | O_TRUNC)], descriptors: [(2, 1)])
    }

    private static func waitFor(_ name: String, _ process: ChildProcess, _ log: URL, ready: () -> String?) throws
        -> String
    {
        var value: String?
        eventually(timeout: 30) {
            value = ready()
            return value != nil || !process.isRunning
        }
        if let value { return value }
        throw SessionError("\(name) did not start (it \(process.ending ?? "ran on")): \(tail(ofFile: log.path))")
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}

public struct DisplaysTrait: SuiteTrait, TestScoping {
    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let displays = try Displays.start()
        defer { displays.stop() }
        try await Displays.$current.withValue(displays) { try await function() }
    }
}

extension Trait where Self == DisplaysTrait {
    /// An X server and a Wayland compositor for the whole suite.
    public static var displays: Self { DisplaysTrait() }
}
