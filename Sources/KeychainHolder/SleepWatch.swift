import CLinux
import Glibc
import KeychainDBus
import KeychainSystem

/// The machine going to sleep, as logind announces it on the system bus (`PrepareForSleep(true)`
/// of `org.freedesktop.login1.Manager`, sent by logind's own name only: the bus routes our match
/// rule's broadcasts from that name's owner alone): the holder forgets its vaults then, so that a
/// laptop left suspended holds none. While awake it holds a delay inhibitor of logind's
/// (`Inhibit("sleep", …, "delay")`, a descriptor passed on the bus), which it closes once it has
/// forgotten them: logind does not suspend before (up to its InhibitDelayMaxSec, 5 s by default).
/// It takes another at the resume.
///
/// On our own wire (``BusWire``, descriptors negotiated), joined to the holder's one `poll`:
/// ``descriptors`` are the bus socket, or while there is no bus the retry timer; ``handle()``
/// reads what came without waiting. Used on the holder's thread only.
package final class SleepWatch {
    /// Seconds between two tries to reach the system bus: at the start where none answers, and
    /// after it closed the connection (the bus restarted): suspends lock again once it is back.
    static let retrySeconds = 2

    private let address: String
    private let sleeping: () -> Void
    /// The connection, nil while there is none; the Inhibit sent and not answered yet.
    private var wire: BusWire?
    private var inhibiting: UInt32?
    /// The delay inhibitor's descriptor, -1 while none is held.
    private var inhibitor: Int32 = -1
    /// Fires ``retrySeconds`` after the last try, while there is no connection (CLOCK_MONOTONIC).
    private let retry: Int32
    /// How long a message may take on the bus.
    private let seconds: Double

    /// Connects to the system bus (`$DBUS_SYSTEM_BUS_ADDRESS`, else logind's usual one), subscribes
    /// and takes the inhibitor; returns once logind answered (the bus has the subscription then:
    /// it handles a connection's messages in order), or at most `seconds` later. Where there is
    /// no system bus (no logind: a container, a CI runner) it tries again every ``retrySeconds``.
    package init(waiting seconds: Double, _ sleeping: @escaping () -> Void) {
        address = Environment.value("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket"
        (self.seconds, self.sleeping) = (seconds, sleeping)
        retry = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK))
        connect()
        if let wire, let inhibiting {
            (wire.operation, wire.seconds) = ("logind to answer Inhibit", seconds)
            do throws(DBusError) {
                taken(try wire.reply(to: inhibiting))
            } catch .timedOut {
                // Answered later, through handle().
            } catch {
                disconnected()
            }
        }
        // A signal read while waiting is handled now: no readiness of the socket will tell of it.
        if wire != nil { handle() }
    }

    deinit {
        release()
        if retry >= 0 { close(retry) }
    }

    /// What the holder's poll waits on for this watch: the bus connection, else the retry timer.
    package var descriptors: [Int32] {
        if let wire { return [wire.descriptor] }
        return retry >= 0 ? [retry] : []
    }

    /// Handles what came, without waiting: logind's announcements and answers, the bus hanging
    /// up (then the retry timer is set), or, the timer fired, another try.
    package func handle() {
        guard let wire else {
            var expirations: UInt64 = 0
            guard read(retry, &expirations, 8) == 8 else { return }
            connect()
            return
        }
        do {
            for signal in try wire.signals(until: 0, waking: -1) {
                guard signal.arguments.count == 1, case .boolean(let sleep) = signal.arguments[0] else { continue }
                prepare(sleep: sleep)
            }
            if let inhibiting, let reply = wire.takeReply(to: inhibiting) { taken(reply) }
        } catch {
            disconnected()
        }
    }

    /// Connects, sends the subscription and Inhibit behind it, without waiting; else sets the
    /// retry timer.
    private func connect() {
        guard let endpoint = SessionBusSocket.Endpoint(address),
            let wire = BusWire(endpoint, operation: "the system bus to answer", seconds: seconds, descriptors: true)
        else { return disconnected() }
        self.wire = wire
        do {
            _ = try wire.beginSubscription(
                BusMatchRule(
                    sender: "org.freedesktop.login1", interface: "org.freedesktop.login1.Manager",
                    member: "PrepareForSleep", path: "/org/freedesktop/login1"))
            try inhibit()
        } catch {
            disconnected()
        }
    }

    /// Sends Inhibit("sleep", who, why, "delay") -> (h), unless one is held or on its way.
    private func inhibit() throws {
        guard let wire, inhibitor < 0, inhibiting == nil else { return }
        let arguments: [BusValue] = [
            .string("sleep"), .string("keychain-cli"), .string("Forget the vaults keychain-cli unlock holds open"),
            .string("delay"),
        ]
        inhibiting = try wire.send(
            "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "Inhibit", arguments)
    }

    /// Keeps the descriptor logind's answer to Inhibit carries (none for an error: no logind).
    private func taken(_ reply: BusMessage.Received) {
        inhibiting = nil
        var body = reply.body
        let index = reply.errorName == nil && reply.signature == "h" ? (try? body.uint32()).map(Int.init) : nil
        for (position, descriptor) in reply.descriptors.enumerated() {
            if position == index && inhibitor < 0 { inhibitor = descriptor } else { close(descriptor) }
        }
    }

    /// PrepareForSleep(`sleep`): going to sleep, forget then let it; waking, delay the next.
    private func prepare(sleep: Bool) {
        if sleep {
            sleeping()
            release()
        } else {
            do { try inhibit() } catch { disconnected() }
        }
    }

    private func release() {
        if inhibitor >= 0 { close(inhibitor) }
        inhibitor = -1
    }

    /// No connection: the inhibitor goes with it, and the next try is ``retrySeconds`` away.
    private func disconnected() {
        (wire, inhibiting) = (nil, nil)
        release()
        var setting = itimerspec()
        setting.it_value = timespec(tv_sec: Self.retrySeconds, tv_nsec: 0)
        timerfd_settime(retry, 0, &setting, nil)
    }
}
