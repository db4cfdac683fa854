import KeychainDBus

/// One connection to the bus, whichever way it goes: our own wire (for a Unix socket,
/// SecretServiceDirect.swift) or GDBus, within one bounded operation. One concrete type, so that
/// the client's code is compiled once for both, with no generic or existential dispatch on the
/// path of a `get`.
enum ServiceBus: BusConnection {
    case wire(BusWire)
    case gdbus(GDBusCalls)

    enum Call {
        case wire(UInt32)
        case gdbus(BoundedOperation.PendingCall)
    }

    var operation: String {
        switch self {
        case .wire(let wire): wire.operation
        case .gdbus(let calls): calls.operation
        }
    }

    var seconds: Double {
        switch self {
        case .wire(let wire): wire.seconds
        case .gdbus(let calls): calls.seconds
        }
    }

    func send(_ destination: String, _ path: String, _ interface: String, _ member: String, _ arguments: [BusValue])
        throws -> Call
    {
        switch self {
        case .wire(let wire): .wire(try wire.send(destination, path, interface, member, arguments))
        case .gdbus(let calls): .gdbus(calls.send(destination, path, interface, member, arguments))
        }
    }

    func answer(_ call: Call) throws -> BusAnswer {
        switch (self, call) {
        case (.wire(let wire), .wire(let serial)): try wire.answer(serial)
        case (.gdbus(let calls), .gdbus(let pending)): try calls.answer(pending)
        default: preconditionFailure("a call answered on another connection than it was sent on")
        }
    }

    func emit(_ path: String, _ interface: String, _ member: String) {
        switch self {
        case .wire(let wire): wire.emit(path, interface, member)
        case .gdbus(let calls): calls.emit(path, interface, member)
        }
    }

    func subscribe(_ rule: BusMatchRule) throws {
        switch self {
        case .wire(let wire): try wire.subscribe(rule)
        case .gdbus(let calls): try calls.subscribe(rule)
        }
    }

    func signals(until deadline: Double, waking wake: Int32) throws -> [BusSignal] {
        switch self {
        case .wire(let wire): try wire.signals(until: deadline, waking: wake)
        case .gdbus(let calls): try calls.signals(until: deadline, waking: wake)
        }
    }
}
