/// A signal received on a connection: who sent it (the sender's unique name on our wire; GDBus
/// gives the same), the object it is about, its interface, member and arguments.
package struct BusSignal: Equatable, Sendable {
    package let sender: String
    package let path: String
    package let interface: String
    package let member: String
    package let arguments: [BusValue]

    package init(sender: String, path: String, interface: String, member: String, arguments: [BusValue]) {
        (self.sender, self.path, self.interface, self.member, self.arguments) = (
            sender, path, interface, member, arguments
        )
    }
}

/// The signals a subscription asks the bus for (a D-Bus match rule of type `signal`): each field
/// that is set must match, one left nil matches anything. `arg0` is the first argument, a string.
package struct BusMatchRule: Equatable, Sendable {
    package var sender: String?
    package var interface: String?
    package var member: String?
    package var path: String?
    package var arg0: String?

    package init(
        sender: String? = nil, interface: String? = nil, member: String? = nil, path: String? = nil,
        arg0: String? = nil
    ) {
        (self.sender, self.interface, self.member, self.path, self.arg0) = (sender, interface, member, path, arg0)
    }

    /// The rule as `AddMatch` takes it: `type='signal',sender='…',…`, each value quoted (a quote
    /// inside one is closed, escaped and opened again, as the specification has it).
    package var text: String {
        let fields = [("sender", sender), ("interface", interface), ("member", member), ("path", path), ("arg0", arg0)]
        let values = fields.compactMap { key, value in
            value.map { "\(key)='" + $0.replacing("'", with: "'\\''") + "'" }
        }
        return (["type='signal'"] + values).joined(separator: ",")
    }

    /// Whether `signal` is one this rule asks for, as far as the receiving end can tell: a
    /// sender given by a well-known name is the bus's to check (it routes only the broadcasts of
    /// that name's owner), so a signal sent to us alone (`unicast`), which the bus delivers
    /// whatever our rules, never matches it; a unique name (or the bus's own) is compared here.
    package func matches(_ signal: BusSignal, unicast: Bool = false) -> Bool {
        if let sender {
            if sender.hasPrefix(":") || sender == "org.freedesktop.DBus" {
                guard sender == signal.sender else { return false }
            } else if unicast {
                return false
            }
        }
        if let interface, interface != signal.interface { return false }
        if let member, member != signal.member { return false }
        if let path, path != signal.path { return false }
        if let arg0 {
            guard case .string(let first) = signal.arguments.first, first == arg0 else { return false }
        }
        return true
    }
}
