import FoundationEssentials
import KeychainDBus
import KeychainSecretSession
import KeychainStore

// The Secret Service's calls written once, over any BusConnection: our own wire (for a Unix
// socket) or GDBus (any other bus). Each quirk of a provider with a call is handled here, for
// both; the operations built on them are in SecretServiceClient.swift and SecretServiceItems.swift.
extension SecretServiceConnection {
    /// Sends `org.freedesktop.Secret.Service.SearchItems(a{ss} attributes) -> (ao unlocked, ao
    /// locked)` for `pairs`, without waiting for its answer (``searchResult(_:_:on:)``).
    static func sendSearch<Bus: BusConnection>(_ pairs: [(String, String)], on bus: Bus) throws -> Bus.Call {
        try bus.send(
            busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems", [.strings(pairs)])
    }

    /// The paths of the unlocked and of the locked items the search `call` (of `pairs`) found.
    /// gnome-keyring 42 answers UnknownMethod ("Method SearchItems is not implemented") when an
    /// item it matched is deleted by another client during the search (measured: 1 run in 3 of
    /// ForeignItemTests' race): the service object exists, so an answer that an object is gone
    /// means "search again", up to four times more.
    static func searchResult<Bus: BusConnection>(_ call: Bus.Call, _ pairs: [(String, String)], on bus: Bus) throws
        -> (unlocked: [String], locked: [String])
    {
        var answer = try bus.answer(call)
        for _ in 0..<4 {
            guard case .error(let name, _) = answer, vanishedObjectErrors.contains(name) else { break }
            answer = try bus.answer(sendSearch(pairs, on: bus))
        }
        if case .error(let name, _) = answer, vanishedObjectErrors.contains(name) {
            throw KeychainError.backendFailure(detail: "the Secret Service's search kept failing while items changed")
        }
        let values = try values(of: answer, on: bus)
        guard values.count == 2, let unlocked = values[0].strings, let locked = values[1].strings else {
            throw KeychainError.backendFailure(
                detail: "the Secret Service answered SearchItems with \(values.map(\.signature).joined())")
        }
        return (unlocked, locked)
    }

    /// The values of an answer; an error the service sent, thrown as its case.
    static func values<Bus: BusConnection>(of answer: BusAnswer, on bus: Bus) throws -> [BusValue] {
        switch answer {
        case .values(let values):
            return values
        case .error(let name, let message):
            throw KeychainError(
                remote: name, detail: message.isEmpty ? name : message, operation: bus.operation, seconds: bus.seconds)
        }
    }

    /// Whether the default collection is locked and shows no item: a search then finds nothing
    /// where the item may well be (KeePassXC hides a locked database's items). False when
    /// there is no default collection, or the service will not say.
    static func hidesItemsWhileLocked<Bus: BusConnection>(on bus: Bus) throws -> Bool {
        let alias = "/org/freedesktop/secrets/aliases/default"
        func property(_ name: String) throws -> Bus.Call {
            // org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value)
            try bus.send(
                busName, alias, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.freedesktop.Secret.Collection"), .string(name)])
        }
        /// The value a Get answered, nil for an error (no default collection, a service that does
        /// not say).
        func value(_ call: Bus.Call) throws -> BusValue? {
            guard case .values(let values) = try bus.answer(call), values.count == 1,
                case .variant(let value) = values[0]
            else { return nil }
            return value
        }
        guard try value(property("Locked")) == .boolean(true), let paths = try value(property("Items"))?.strings
        else { return false }
        return paths.isEmpty
    }

    /// Sends `org.freedesktop.Secret.Service.OpenSession(s algorithm, v input) -> (v output, o
    /// result)` with our half of `exchange`, without waiting (``openedSession(_:_:on:)``).
    static func sendOpenSession<Bus: BusConnection>(_ exchange: SecretSession.KeyExchange, on bus: Bus) throws
        -> Bus.Call
    {
        try bus.send(
            busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "OpenSession",
            [.string(SecretSession.algorithm), .variant(.bytes(exchange.paddedPublicValue))])
    }

    /// The session an OpenSession `call` opened; nil when the service offers no encrypted
    /// session (NotSupported: the caller reads through libsecret). Its key is derived when first
    /// needed (``SecretSession/deriveKey()``, while the first request in it is on its way).
    static func openedSession<Bus: BusConnection>(
        _ call: Bus.Call, _ exchange: SecretSession.KeyExchange, on bus: Bus
    ) throws -> SecretSession? {
        let answer = try bus.answer(call)
        if case .error("org.freedesktop.DBus.Error.NotSupported", _) = answer { return nil }
        let values = try values(of: answer, on: bus)
        guard values.count == 2, case .variant(.bytes(let peer)) = values[0], case .objectPath(let path) = values[1]
        else {
            throw KeychainError.backendFailure(
                detail: "the Secret Service answered the session's key exchange with no public value")
        }
        return SecretSession(path: path, exchange: exchange, peer: peer)
    }

    /// Sends `org.freedesktop.Secret.Item.GetSecret(o session) -> ((oayays) secret)` for the item
    /// at `path`, without waiting (``secret(_:at:in:on:)``).
    static func sendGetSecret<Bus: BusConnection>(at path: String, in session: SecretSession, on bus: Bus) throws
        -> Bus.Call
    {
        try bus.send(busName, path, "org.freedesktop.Secret.Item", "GetSecret", [.objectPath(session.path)])
    }

    /// The secret a GetSecret `call` of the item at `path` read, decrypted; nil when the item is
    /// gone (another client deleted it after the search).
    static func secret<Bus: BusConnection>(_ call: Bus.Call, at path: String, in session: SecretSession, on bus: Bus)
        throws -> Data?
    {
        let answer = try bus.answer(call)
        if case .error(let name, _) = answer, vanishedObjectErrors.contains(name) { return nil }
        let values = try values(of: answer, on: bus)
        guard values.count == 1 else {
            throw KeychainError.backendFailure(detail: "the Secret Service answered GetSecret with no secret")
        }
        return try confirmingEmpty(session.open(values[0]), at: path, on: bus)
    }

    /// `secret`, or nil when it is empty and the item at `path` is gone by now. kwalletd5
    /// removes an item's secret before the item itself (a deleted object goes once its event
    /// loop turns): a read that comes between gets an empty secret, where the item is in fact
    /// gone. One property read, asked only for an empty secret, tells them apart.
    static func confirmingEmpty<Bus: BusConnection>(_ secret: Data, at path: String, on bus: Bus) throws -> Data? {
        guard secret.isEmpty else { return secret }
        // org.freedesktop.DBus.Properties.Get(s interface, s name) -> (v value)
        let label = try bus.send(
            busName, path, "org.freedesktop.DBus.Properties", "Get",
            [.string("org.freedesktop.Secret.Item"), .string("Label")])
        let answer = try bus.answer(label)
        if case .error(let name, _) = answer, vanishedObjectErrors.contains(name) { return nil }
        _ = try values(of: answer, on: bus)
        return secret
    }
    /// `Item.SetSecret` of the item at `path`, and watchers told (``SecretServiceStore/secretChangedSignal``,
    /// a broadcast on the item's path, for which gnome-keyring sends nothing); false when the item
    /// is gone (another client deleted it after the search). The signal and a `Peer.Ping` to the
    /// bus go right behind the SetSecret: the service has the request before any watcher hears
    /// of it, and the Ping's answer, one round trip with SetSecret's, means the bus has the
    /// signal. (A SetSecret that fails leaves watchers a `changed` for an unchanged item.)
    static func putSecret<Bus: BusConnection>(
        _ secret: Data, at path: String, in session: SecretSession, on bus: Bus
    ) throws -> Bool {
        // org.freedesktop.Secret.Item.SetSecret((oayays) secret) -> ()
        let set = try bus.send(
            busName, path, "org.freedesktop.Secret.Item", "SetSecret",
            [session.seal(secret, contentType: "application/octet-stream")])
        let (interface, member) = SecretServiceStore.secretChangedSignal
        bus.emit(path, interface, member)
        // org.freedesktop.DBus.Peer.Ping() -> ()
        let ping = try bus.send(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.Peer", "Ping", [])
        let answer = try bus.answer(set)
        _ = try values(of: bus.answer(ping), on: bus)
        if case .error(let name, _) = answer, vanishedObjectErrors.contains(name) { return false }
        _ = try values(of: answer, on: bus)
        return true
    }

    /// What a `Collection.CreateItem` came to.
    enum Creation: Equatable {
        case created
        /// The collection is locked (IsLocked): it must be unlocked first, which may prompt.
        case locked
        /// No such collection (no default keyring): libsecret creates one.
        case noCollection
        /// The service asks for the prompt at this path before the item exists (KWallet may).
        case prompt(String)
    }

    /// `Collection.CreateItem` in the default collection, addressed by its alias path as
    /// libsecret's store does (no ReadAlias), with `attributes` and `label`, replacing an item
    /// with the same attributes.
    static func createItem<Bus: BusConnection>(
        _ secret: Data, attributes: [(String, String)], label: String, contentType: String,
        in session: SecretSession, on bus: Bus
    ) throws -> Creation {
        // Encrypted first: a session whose key cannot be derived throws before anything is sent.
        let sealed = try session.seal(secret, contentType: contentType)
        let properties = BusValue.dictionary(
            key: "s", value: "v",
            [
                .init(.string("org.freedesktop.Secret.Item.Label"), .variant(.string(label))),
                .init(.string("org.freedesktop.Secret.Item.Attributes"), .variant(.strings(attributes))),
            ])
        // org.freedesktop.Secret.Collection.CreateItem(a{sv} properties, (oayays) secret, b replace)
        //   -> (o item, o prompt)
        let answer = try bus.answer(
            bus.send(
                busName, "/org/freedesktop/secrets/aliases/default", "org.freedesktop.Secret.Collection",
                "CreateItem", [properties, sealed, .boolean(true)]))
        if case .error(let name, _) = answer {
            if name == "org.freedesktop.Secret.Error.IsLocked" { return .locked }
            if vanishedObjectErrors.contains(name) { return .noCollection }
        }
        let values = try values(of: answer, on: bus)
        guard values.count == 2, case .objectPath = values[0], case .objectPath(let prompt) = values[1] else {
            throw KeychainError.backendFailure(
                detail: "the Secret Service answered CreateItem with \(values.map(\.signature).joined())")
        }
        return prompt == "/" ? .created : .prompt(prompt)
    }

    /// The collection the alias `name` stands for: `Service.ReadAlias(s name) -> (o collection)`;
    /// nil when there is none ("/").
    static func collection<Bus: BusConnection>(aliased name: String, on bus: Bus) throws -> String? {
        let answer = try bus.answer(
            bus.send(
                busName, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "ReadAlias", [.string(name)]))
        let values = try values(of: answer, on: bus)
        guard values.count == 1, case .objectPath(let path) = values[0] else {
            throw KeychainError.backendFailure(detail: "the Secret Service answered ReadAlias without a path")
        }
        return path == "/" ? nil : path
    }
}

extension SecretSession {
    /// `secret` encrypted in this session, as the `(oayays)` struct the service takes: this
    /// session, the IV, the ciphertext and the content type.
    func seal(_ secret: Data, contentType: String) throws -> BusValue {
        let sealed: (parameters: [UInt8], value: [UInt8])
        do {
            sealed = try encrypt(secret)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError.backendFailure(detail: "the secret could not be encrypted")
        }
        return .structure([.objectPath(path), .bytes(sealed.parameters), .bytes(sealed.value), .string(contentType)])
    }

    /// The plaintext of a `(oayays)` secret struct the service sent (session, IV, ciphertext,
    /// content type), which must name this session.
    func open(_ secret: BusValue) throws -> Data {
        guard case .structure(let fields) = secret, fields.count == 4, case .objectPath(let session) = fields[0],
            case .bytes(let parameters) = fields[1], case .bytes(let value) = fields[2]
        else {
            throw KeychainError.backendFailure(detail: "the Secret Service sent a secret that is not (oayays)")
        }
        guard session == path else {
            throw KeychainError.backendFailure(detail: "the Secret Service sent the secret in another session")
        }
        do {
            return try decrypt(parameters: parameters, value: value)
        } catch let error as KeychainError {
            throw error
        } catch {
            throw KeychainError.backendFailure(detail: "the secret could not be decrypted")
        }
    }
}
