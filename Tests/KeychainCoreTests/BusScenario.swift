import Foundation

@testable import KeychainDBus

/// What a scripted Secret Service answers, written once for every transport: the in-process
/// ``FakeBus`` plays it, and so does Tests/clients/scripted_service.py (on a private bus, reached
/// by our wire and by GDBus), from its ``json``. For each method, the answers it gives in turn;
/// a call that matches no method with an answer left gets the error ``unscripted``.
struct BusScenario: Sendable {
    /// One answer to one call.
    enum Reply: Sendable, Equatable {
        /// A method return with these values.
        case values([BusValue])
        /// A D-Bus error, with its message ("" for none).
        case error(String, String = "")
        /// No answer at all: the caller's wait runs out.
        case never
        /// A signal sent just before the answer, on the way to the caller ahead of it.
        indirect case afterSignal(Signal, Reply)
        /// A Unix descriptor (`h`): the read end of a pipe that holds these bytes, then ends.
        case descriptor(String)
    }

    /// A signal the service sends (broadcast, from its own connection).
    struct Signal: Sendable, Equatable {
        let path: String
        let interface: String
        let member: String
        let arguments: [BusValue]
    }

    /// The calls a queue of answers is for: `path` nil for any object.
    struct Method: Sendable, Equatable {
        let interface: String
        let member: String
        let path: String?

        func matches(_ path: String, _ interface: String, _ member: String) -> Bool {
            self.interface == interface && self.member == member && (self.path == nil || self.path == path)
        }
    }

    /// The error a call with no answer scripted for it gets, from either player.
    static let unscripted = "org.keychain_cli.Test.Unscripted"

    private(set) var methods: [(method: Method, replies: [Reply])] = []

    /// This scenario with `replies`, in turn, for the calls of `member` of `interface` (on `path`).
    func answering(_ interface: String, _ member: String, at path: String? = nil, _ replies: Reply...) -> Self {
        answering(interface, member, at: path, replies)
    }

    func answering(_ interface: String, _ member: String, at path: String? = nil, _ replies: [Reply]) -> Self {
        var scenario = self
        scenario.methods.append((Method(interface: interface, member: member, path: path), replies))
        return scenario
    }

    /// One answer as scripted_service.py reads it; a signal before it under "signal".
    private static func json(_ reply: Reply) -> [String: Any] {
        switch reply {
        case .values(let values): ["signature": values.map(\.signature).joined(), "values": values.map(\.json)]
        case .error(let name, let message): ["error": name, "message": message]
        case .never: ["never": true]
        case .descriptor(let text): ["descriptor": text]
        case .afterSignal(let signal, let reply):
            json(reply).merging(
                [
                    "signal": [
                        "path": signal.path, "interface": signal.interface, "member": signal.member,
                        "signature": signal.arguments.map(\.signature).joined(),
                        "values": signal.arguments.map(\.json),
                    ]
                ]
            ) { _, new in new }
        }
    }

    /// The scenario as scripted_service.py reads it: a list of methods, each with its answers,
    /// every value with its signature (see ``BusValue/json``).
    var json: Data {
        let methods: [[String: Any]] = methods.map { method, replies in
            [
                "interface": method.interface, "member": method.member, "path": method.path ?? NSNull(),
                "replies": replies.map(Self.json),
            ]
        }
        // Only strings, numbers, arrays, dictionaries and NSNull: it cannot fail.
        return try! JSONSerialization.data(withJSONObject: methods, options: [.sortedKeys])
    }
}

/// A call or a signal the service got, as both players log it: its object, interface and
/// member, and its arguments of type `s` (a property's name), enough to tell the calls apart.
struct BusEvent: Codable, Equatable, Sendable, CustomStringConvertible {
    enum Kind: String, Codable, Sendable { case call, signal }
    let kind: Kind
    let path: String
    let interface: String
    let member: String
    let strings: [String]

    /// "Member string…", "signal Member string…".
    var description: String {
        ([kind == .signal ? "signal " + member : member] + strings).joined(separator: " ")
    }
}

extension BusValue {
    /// The value as JSON that scripted_service.py turns back into it, given its signature: `ay`
    /// a list of numbers, a dictionary a list of [key, value], a structure a list, a variant
    /// [signature, value].
    var json: Any {
        switch self {
        case .byte(let byte): Int(byte)
        case .boolean(let flag): flag
        case .uint32(let number): Int(number)
        case .uint64(let number): NSNumber(value: number)
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .bytes(let bytes): bytes.map(Int.init)
        case .array(_, let elements): elements.map(\.json)
        case .dictionary(_, _, let entries): entries.map { [$0.key.json, $0.value.json] }
        case .structure(let fields): fields.map(\.json)
        case .variant(let inner): [inner.signature, inner.json]
        case .other: 0  // a zero of its type
        }
    }
}
