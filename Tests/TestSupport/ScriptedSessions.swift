import Foundation
import Testing

extension KeyringSession {
    /// A session whose Secret Service is a throwaway, headless KeePassXC (scripts/with-keepassxc:
    /// its own bus, Xvfb, an unlocked database whose root group is the collection `login`, aliased
    /// `default`), kept until ``stop()``. `bus` is the script, which stops them all on SIGTERM.
    public static func startKeePassXC() throws -> KeyringSession {
        try startScripted("with-keepassxc", what: "KeePassXC")
    }

    /// A session whose Secret Service is a throwaway, headless kwalletd5 (scripts/with-kwallet:
    /// its own bus, an open wallet `kdewallet` that is the collection aliased `default`), kept
    /// until ``stop()``.
    public static func startKWallet() throws -> KeyringSession {
        try startScripted("with-kwallet", what: "kwalletd5")
    }

    /// A session whose bus and provider `scripts/SCRIPT` starts, and stops when it gets SIGTERM.
    private static func startScripted(_ script: String, what: String) throws -> KeyringSession {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kc-\(script)-\(UUID().uuidString)")
        for sub in ["run", "data", "config"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let ready = directory.appendingPathComponent("address")
        let process = Process()
        process.executableURL = packageRoot.appendingPathComponent("scripts/\(script)")
        process.arguments = [
            "/bin/sh", "-c",
            #"printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" > "$0.new" && mv "$0.new" "$0" && exec sleep 100000"#,
            ready.path,
        ]
        process.environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let log = directory.appendingPathComponent("\(script).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: ready.path) {
            guard process.isRunning, Date() < deadline else {
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                try? FileManager.default.removeItem(at: directory)
                throw SessionError("scripts/\(script) did not start \(what): \(output)")
            }
            usleep(20_000)
        }
        let address = try String(contentsOf: ready, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        // The script stops its provider and the bus before it exits (up to 12 s for a KeePassXC
        // stuck on a dialog): killed sooner, it would leave them running.
        return KeyringSession(directory: directory, busAddress: address, bus: process, daemon: nil, grace: 20)
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

    /// A private, headless kwalletd5 (``KeyringSession/startKWallet()``) for the whole suite.
    public static var kwalletSession: Self { KeyringSessionTrait(start: KeyringSession.startKWallet) }
}
