import Foundation
import Testing

extension KeyringSession {
    /// A session whose Secret Service is a throwaway, headless KeePassXC (scripts/with-keepassxc:
    /// its own bus, Xvfb, an unlocked database whose root group is the collection `login`, aliased
    /// `default`), kept until ``stop()``. `bus` is the script, which stops them all on SIGTERM.
    public static func startKeePassXC() throws -> KeyringSession {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kc-keepassxc-\(UUID().uuidString)")
        for sub in ["run", "data", "config"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let ready = directory.appendingPathComponent("address")
        let script = Process()
        script.executableURL = packageRoot.appendingPathComponent("scripts/with-keepassxc")
        script.arguments = [
            "/bin/sh", "-c",
            #"printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" > "$0.new" && mv "$0.new" "$0" && exec sleep 100000"#,
            ready.path,
        ]
        script.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        script.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        script.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let log = directory.appendingPathComponent("with-keepassxc.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        script.standardError = try FileHandle(forWritingTo: log)
        try script.run()
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: ready.path) {
            guard script.isRunning, Date() < deadline else {
                if script.isRunning { script.terminate() }
                script.waitUntilExit()
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: directory)
                throw SessionError("scripts/with-keepassxc did not start KeePassXC: \(output)")
            }
            usleep(20_000)
        }
        let address = try String(contentsOf: ready, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        // The script stops KeePassXC, Xvfb and the bus before it exits (up to 12 s for a
        // KeePassXC stuck on a dialog): killed sooner, it would leave them running.
        return KeyringSession(directory: directory, busAddress: address, bus: script, daemon: nil, grace: 20)
    }

    /// Locks KeePassXC's database as its Lock button would: Service.Lock answers with a prompt,
    /// which locks it when performed. Returns once the collection says it is locked.
    public func lockKeePassXC() throws {
        let reply = try dbusSend([
            "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets", "org.freedesktop.Secret.Service.Lock",
            "array:objpath:/org/freedesktop/secrets/collection/login",
        ])
        guard
            let prompt = reply.split(separator: "\"").first(where: { $0.hasPrefix("/org/freedesktop/secrets/prompt/") })
        else { throw SessionError("KeePassXC's Lock gave no prompt: \(reply)") }
        try dbusSend([
            "--dest=org.freedesktop.secrets", String(prompt), "org.freedesktop.Secret.Prompt.Prompt", "string:",
        ])
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let locked = try dbusSend([
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets/collection/login",
                "org.freedesktop.DBus.Properties.Get", "string:org.freedesktop.Secret.Collection", "string:Locked",
            ])
            if locked.contains("boolean true") { return }
            usleep(50_000)
        }
        throw SessionError("KeePassXC's database did not lock within 20 s")
    }
}

extension Trait where Self == KeyringSessionTrait {
    /// A private, headless KeePassXC (``KeyringSession/startKeePassXC()``) for the whole suite.
    public static var keepassxcSession: Self { KeyringSessionTrait(start: KeyringSession.startKeePassXC) }
}
