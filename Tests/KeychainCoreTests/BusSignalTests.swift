import Foundation
import Testing

@testable import KeychainDBus
@testable import KeychainSecretService
@testable import KeychainSystem

/// Signals on the bus protocol (``BusConnection/subscribe(_:)``, ``BusConnection/signals(until:waking:)``),
/// as the Secret Service watcher subscribes to them, on every transport.
@Suite("Bus signals: subscribed once for every transport, kept apart from replies")
struct BusSignalTests {
    static let collection = "/org/freedesktop/secrets/collection/login"
    static let created = BusScenario.Signal(
        path: collection, interface: SignalWatcher.collectionInterface, member: "ItemCreated",
        arguments: [.objectPath(collection + "/7")])

    /// The service signals a new item just before it answers a search, and a second search is on
    /// its way behind the first (pipelined): the signal is neither taken for the first reply nor
    /// lost while the client waits for the replies, and is handed out once.
    @Test(arguments: Transport.allCases)
    func aSignalBetweenACallAndItsReplyIsKeptAndNotTakenForTheReply(_ transport: Transport) throws {
        let found = { (path: String) in
            BusScenario.Reply.values([.array(element: "o", [.objectPath(path)]), .array(element: "o", [])])
        }
        let scenario = BusScenario().answering(
            "org.freedesktop.Secret.Service", "SearchItems", .afterSignal(Self.created, found("/a")), found("/b"))
        try ScriptedPeer.playing(scenario, over: transport) { peer in
            let (first, second, signals, later) = try peer.run { bus in try searchTwice(on: bus) }
            #expect(first == .values([.array(element: "o", [.objectPath("/a")]), .array(element: "o", [])]))
            #expect(second == .values([.array(element: "o", [.objectPath("/b")]), .array(element: "o", [])]))
            #expect(
                signals == [
                    BusSignal(
                        sender: signals.first?.sender ?? "", path: Self.created.path,
                        interface: Self.created.interface, member: "ItemCreated",
                        arguments: Self.created.arguments)
                ])
            #expect(signals.first?.sender.hasPrefix(":") == true, "the sender's unique name")
            #expect(later.isEmpty, "handed out twice: \(later)")
        }
    }

    /// The rule as AddMatch reads it: a quote inside a value is closed, escaped and opened again.
    @Test func aMatchRuleIsWrittenAsTheSpecificationQuotesIt() {
        let rule = BusMatchRule(sender: "org.freedesktop.secrets", interface: "a.B", arg0: "it's")
        #expect(rule.text == "type='signal',sender='org.freedesktop.secrets',interface='a.B',arg0='it'\\''s'")
    }

    /// A well-known sender is the bus's to check for a broadcast; a signal sent to us alone, which
    /// the bus delivers whatever the rules, cannot show it came from that name, and a unique name
    /// is compared here.
    @Test func aUnicastSignalNeverPassesForAWellKnownSender() {
        let signal = BusSignal(sender: ":1.9", path: "/p", interface: "a.B", member: "M", arguments: [.string("x")])
        #expect(BusMatchRule(sender: "org.freedesktop.secrets", interface: "a.B").matches(signal))
        #expect(!BusMatchRule(sender: "org.freedesktop.secrets", interface: "a.B").matches(signal, unicast: true))
        #expect(BusMatchRule(sender: ":1.9", member: "M").matches(signal, unicast: true))
        #expect(!BusMatchRule(sender: ":1.8").matches(signal))
        #expect(!BusMatchRule(sender: "org.freedesktop.DBus").matches(signal))
        #expect(BusMatchRule(arg0: "x").matches(signal) && !BusMatchRule(arg0: "y").matches(signal))
        #expect(!BusMatchRule(path: "/q").matches(signal) && !BusMatchRule(interface: "a.C").matches(signal))
    }
}

/// Subscribes as the watcher does, sends two searches back to back, reads their answers, then the
/// signals received (waiting for the first: GDBus delivers on its next iteration), then again
/// what is left, without waiting.
private func searchTwice<Bus: BusConnection>(on bus: Bus) throws
    -> (BusAnswer, BusAnswer, [BusSignal], [BusSignal])
{
    for rule in SignalWatcher.rules { try bus.subscribe(rule) }
    let search = { () throws -> Bus.Call in
        try bus.send(
            SecretServiceConnection.busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service",
            "SearchItems", [.strings([("service", "signals")])])
    }
    let (first, second) = (try search(), try search())
    let answers = (try bus.answer(first), try bus.answer(second))
    let signals = try bus.signals(until: monotonicSeconds() + 30, waking: -1)
    return (answers.0, answers.1, signals, try bus.signals(until: 0, waking: -1))
}
