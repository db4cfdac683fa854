@testable import KeychainDBus

/// An in-process Secret Service on the same protocol as the real transports: it answers each call
/// from its ``BusScenario`` and records every call and signal, in order. A call is its index; an
/// answer scripted never to come throws the time-out at once, where a real transport would throw
/// it after `seconds`. It plays the bus too: a `Peer.Ping` to `org.freedesktop.DBus` is answered
/// (and recorded, as scripted_service.py logs the Pings it overhears on a real bus). A signal
/// scripted before an answer reaches a subscriber as the call is sent.
final class FakeBus: BusConnection {
    var operation: String
    var seconds: Double
    /// Every call and signal sent, in order.
    private(set) var events: [BusEvent] = []
    /// The answers left for each method of the scenario.
    private var methods: [(method: BusScenario.Method, replies: [BusScenario.Reply])]
    /// The answer each call sent gets, by index; nil once taken.
    private var answers: [BusScenario.Reply?] = []
    /// What the caller subscribed to, and the signals sent that it asks for, not handed out yet.
    private var rules: [BusMatchRule] = []
    private var signals: [BusSignal] = []

    init(_ scenario: BusScenario, operation: String = "test", seconds: Double = 5) {
        (methods, self.operation, self.seconds) = (scenario.methods, operation, seconds)
    }

    func send(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue])
        -> Int
    {
        let strings = arguments.compactMap { if case .string(let text) = $0 { text } else { nil } }
        events.append(BusEvent(kind: .call, path: path, interface: interface, member: member, strings: strings))
        var reply = reply(destination, path, interface, member)
        // The service sends a scripted signal before the answer: the caller has it by the time
        // the answer comes.
        while case .afterSignal(let signal, let answer) = reply {
            let sent = BusSignal(
                sender: ":1.1", path: signal.path, interface: signal.interface, member: signal.member,
                arguments: signal.arguments)
            if rules.contains(where: { $0.matches(sent) }) { signals.append(sent) }
            reply = answer
        }
        answers.append(reply)
        return answers.count - 1
    }

    /// The scenario's next answer to a call: from the first method it matches that has one left.
    private func reply(_ destination: String, _ path: String, _ interface: String, _ member: String)
        -> BusScenario.Reply
    {
        if destination == "org.freedesktop.DBus" {
            return interface == "org.freedesktop.DBus.Peer" && member == "Ping"
                ? .values([]) : .error(BusScenario.unscripted, "the fake bus answers only Ping")
        }
        guard
            let index = methods.firstIndex(where: { $0.method.matches(path, interface, member) && !$0.replies.isEmpty })
        else { return .error(BusScenario.unscripted, "no answer scripted for \(interface).\(member) on \(path)") }
        return methods[index].replies.removeFirst()
    }

    func answer(_ call: Int) throws(DBusError) -> BusAnswer {
        guard answers.indices.contains(call), let reply = answers[call] else {
            throw .failed("call \(call) was never sent, or already answered")
        }
        answers[call] = nil
        switch reply {
        case .values(let values): return .values(values)
        case .error(let name, let message): return .error(name: name, message: message)
        case .never: throw .timedOut(operation: operation, seconds: seconds)
        case .afterSignal: throw .failed("a signal left in an answer")  // taken out by send
        case .descriptor: return .values([.other("h")])  // no descriptor crosses the protocol
        }
    }

    func subscribe(_ rule: BusMatchRule) { rules.append(rule) }

    /// The signals sent so far: the fake has nothing to wait for.
    func signals(until deadline: Double, waking wake: Int32) -> [BusSignal] {
        defer { signals = [] }
        return signals
    }

    func emit(_ path: String, _ interface: String, _ member: String) {
        events.append(BusEvent(kind: .signal, path: path, interface: interface, member: member, strings: []))
    }
}
