import Foundation
import Testing

extension KeyringSession {
    /// A session whose Secret Service is a throwaway, headless KeePassXC (scripts/with-keepassxc:
    /// its own bus, Xvfb, an unlocked database whose root group is the collection `login`, aliased
    /// `default`), kept until ``stop()``. `bus` is the script, which stops them all on SIGTERM.
    public static func startKeePassXC() throws -> KeyringSession {
        try startScripted("with-keepassxc", what: "KeePassXC")
    }

    /// ``startKeePassXC()``, whose KeePassXC asks before each deletion ("Delete entry?", its
    /// ConfirmDeleteItem) and whose user answers No.
    public static func startKeePassXCDecliningDeletions() throws -> KeyringSession {
        try startScripted("with-keepassxc", what: "KeePassXC", environment: ["KEEPASSXC_DECLINE_DELETIONS": "1"])
    }

    /// A session whose Secret Service is a throwaway, headless kwalletd5 (scripts/with-kwallet:
    /// its own bus, an open wallet `kdewallet` that is the collection aliased `default`), kept
    /// until ``stop()``.
    public static func startKWallet() throws -> KeyringSession {
        try startScripted("with-kwallet", what: "kwalletd5")
    }

    /// A session whose bus and provider `scripts/SCRIPT` starts, and stops when it gets SIGTERM.
    private static func startScripted(_ script: String, what: String, environment: [String: String] = [:]) throws
        -> KeyringSession
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kc-\(script)-\(UUID().uuidString)")
        for sub in ["run", "data", "config"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        }
        let ready = directory.appendingPathComponent("address")
        let log = directory.appendingPathComponent("\(script).log")
        let process = try ChildProcess(
            packageRoot.appendingPathComponent("scripts/\(script)").path,
            [
                "/bin/sh", "-c",
                #"printf '%s\n' "$DBUS_SESSION_BUS_ADDRESS" > "$0.new" && mv "$0.new" "$0" && exec sleep 100000"#,
                ready.path,
            ],
            environment: environment.merging(["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]) {
                $1
            },
            files: [
                (0, "/dev/null", O_RDONLY), (1, "/dev/null", O_WRONLY), (2, log.path, O_WRONLY | O_CREAT | O_TRUNC),
            ])
        let started = eventually(timeout: 60) {
            FileManager.default.fileExists(atPath: ready.path) || !process.isRunning
        }
        guard started, FileManager.default.fileExists(atPath: ready.path) else {
            process.stop()
            let output = tail(ofFile: log.path)
            try? FileManager.default.removeItem(at: directory)
            throw SessionError("scripts/\(script) did not start \(what): \(output)")
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
        let locked = try eventually(timeout: 20) {
            try dbusSend([
                "--dest=org.freedesktop.secrets", "/org/freedesktop/secrets/collection/login",
                "org.freedesktop.DBus.Properties.Get", "string:org.freedesktop.Secret.Collection", "string:Locked",
            ]).contains("boolean true")
        }
        if locked { return }
        throw SessionError("KeePassXC's database did not lock within 20 s")
    }
}

extension Trait where Self == KeyringSessionTrait {
    /// A private, headless KeePassXC (``KeyringSession/startKeePassXC()``) for the whole suite.
    public static var keepassxcSession: Self { KeyringSessionTrait(start: KeyringSession.startKeePassXC) }

    /// A KeePassXC whose user declines every deletion (``KeyringSession/startKeePassXCDecliningDeletions()``).
    public static var keepassxcDecliningDeletions: Self {
        KeyringSessionTrait(start: KeyringSession.startKeePassXCDecliningDeletions)
    }

    /// A private, headless kwalletd5 (``KeyringSession/startKWallet()``) for the whole suite.
    public static var kwalletSession: Self { KeyringSessionTrait(start: KeyringSession.startKWallet) }
}
