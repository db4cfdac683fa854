import Foundation
import TestSupport
import Testing

/// The holder and logind, on a bus of the test's own standing in for the system bus, with a
/// logind of the test's (python's jeepney): the holder delays a suspend with logind's delay
/// inhibitor (a descriptor passed on our own wire) until it has forgotten its vaults, and watches
/// again after the bus restarts.
@Suite("unlock: suspends")
struct UnlockSuspendTests {
    /// A stand-in for logind: owns org.freedesktop.login1, answers Inhibit with a pipe's write
    /// end (noting "inhibit WHAT WHO WHY MODE"), and when the file `trigger` appears sends
    /// PrepareForSleep(true) and notes whether the holder closed what it was given ("released").
    static let logind = """
        import os, select, sys, time
        from jeepney import DBusAddress, HeaderFields, MessageType, new_method_return, new_signal
        from jeepney.bus_messages import message_bus
        from jeepney.io.blocking import open_dbus_connection
        address, log, trigger = sys.argv[1:4]
        def note(line):
            with open(log, "a") as f: f.write(line + "\\n")
        connection = open_dbus_connection(bus=address, enable_fds=True)
        connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.login1"))
        manager = DBusAddress("/org/freedesktop/login1", interface="org.freedesktop.login1.Manager")
        readers = []
        note("ready")
        while True:
            if os.path.exists(trigger):
                os.unlink(trigger)
                connection.send(new_signal(manager, "PrepareForSleep", "b", (True,)))
                for reader in readers:
                    ready, _, _ = select.select([reader], [], [], 5)
                    note("released" if ready and os.read(reader, 1) == b"" else "held")
                readers = []
            try:
                message = connection.receive(timeout=0.05)
            except TimeoutError:
                continue
            if message.header.message_type == MessageType.method_call \\
                    and message.header.fields.get(HeaderFields.member) == "Inhibit":
                reader, writer = os.pipe()
                connection.send(new_method_return(message, "h", (writer,)))
                os.close(writer)
                readers.append(reader)
                note("inhibit " + " ".join(message.body))
        """

    /// A private bus listening at `socket`, and the stand-in logind on it; both ended by `stop`.
    struct Bus {
        let daemon: ChildProcess
        let logind: ChildProcess
        let address: String

        init(socket: String, log: String, trigger: String) throws {
            address = "unix:path=\(socket)"
            daemon = try startQuietly(
                "/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=\(address)", "--nopidfile"])
            eventually(timeout: 2) { FileManager.default.fileExists(atPath: socket) }
            logind = try startQuietly("/usr/bin/python3", ["-c", UnlockSuspendTests.logind, address, log, trigger])
        }

        func stop() {
            logind.killAndWait()
            daemon.killAndWait()
        }
    }

    @Test func aSuspendWaitsForTheVaultsToBeForgottenAndABusRestartIsWatched() throws {
        let place = try UnlockPlace()
        defer { place.finish() }
        let (socket, log, trigger) = (
            place.scratch.path("bus"), place.scratch.path("logind.log"), place.scratch.path("sleep")
        )
        func notes() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func waitFor(_ note: String, count: Int) {
            eventually(timeout: 10) { notes().filter({ $0.hasPrefix(note) }).count >= count }
        }
        var bus = try Bus(socket: socket, log: log, trigger: trigger)
        defer { bus.stop() }
        waitFor("ready", count: 1)
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        #expect(try place.run(["unlock", "--ttl", "none"], passphrase: true, extra: environment).status == 0)
        waitFor("inhibit", count: 1)
        #expect(
            notes().contains { $0.hasPrefix("inhibit sleep keychain-cli ") && $0.hasSuffix(" delay") }, "\(notes())")
        // On our own wire, in the holder's one poll: no GIO loaded, no thread of GDBus's.
        #expect(place.holders().count == 1)
        for holder in place.holders() {
            let maps = (try? String(contentsOfFile: "/proc/\(holder)/maps", encoding: .utf8)) ?? ""
            #expect(!maps.isEmpty && !maps.contains("libgio-2.0"), "the holder loaded GIO")
        }
        _ = FileManager.default.createFile(atPath: trigger, contents: nil)
        waitFor("released", count: 1)
        #expect(notes().last == "released", "the inhibitor is closed once the vaults are forgotten: \(notes())")
        #expect(try place.run(["get", "token"]).status == 77)

        // The system bus restarts: the holder watches the new one.
        #expect(try place.run(["unlock", "--ttl", "none"], passphrase: true, extra: environment).status == 0)
        bus.stop()
        try? FileManager.default.removeItem(atPath: socket)
        bus = try Bus(socket: socket, log: log, trigger: trigger)
        waitFor("inhibit", count: 3)
        #expect(notes().filter { $0.hasPrefix("inhibit") }.count == 3, "\(notes())")
        #expect(try place.run(["get", "token"]).stdoutText == place.secret)
        _ = FileManager.default.createFile(atPath: trigger, contents: nil)
        waitFor("released", count: 2)
        #expect(try place.run(["get", "token"]).status == 77, "a suspend after the restart locks too")
    }
}
