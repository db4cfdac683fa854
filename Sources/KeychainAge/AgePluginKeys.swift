import KeychainSystem

extension AgePlugin {
    /// A plugin recipient, `age1NAME1…`: Bech32 with the human-readable part `age1` + NAME
    /// (a plain `age1…` X25519 recipient's is `age`). Its data are the plugin's alone.
    package struct Recipient: AgeRecipient, Hashable {
        /// The plugin's name, lower case.
        package let name: String
        /// The recipient in lower case.
        package let encoded: String

        /// The recipient `text` names; nil when it is not a valid plugin recipient.
        package init?(_ text: String) {
            guard text.lowercased().hasPrefix("age1"), let (hrp, _) = Bech32.decode(text), hrp.hasPrefix("age1"),
                AgePlugin.isValidName(String(hrp.dropFirst(4)))
            else { return nil }
            (name, encoded) = (String(hrp.dropFirst(4)), text.lowercased())
        }

        /// This recipient's stanza, from a session of its own. ``AgeFile/makeHeader(recipients:)``
        /// does not call it: it gives each plugin all of its recipients in one session.
        package func wrap(_ fileKey: [UInt8]) throws -> AgeFile.Stanza {
            let stanzas = try AgePlugin.wrap(fileKey, to: [self]).stanzas
            guard stanzas.count == 1 else {
                throw Failure.failed(plugin: name, reason: "it sent \(stanzas.count) stanzas for one recipient")
            }
            return stanzas[0]
        }
    }

    /// A plugin identity, `AGE-PLUGIN-NAME-1…`: what the plugin needs to find its key (a
    /// YubiKey's serial and slot, say), given to it and to nothing else.
    package struct Identity: AgeIdentity {
        /// The plugin's name, lower case.
        package let name: String
        /// The identity in upper case, as written.
        let encoded: String

        /// The identity of an `AGE-PLUGIN-NAME-1…` line; nil when it is not one.
        package init?(_ text: String) {
            guard text.hasPrefix("AGE-PLUGIN-"), let (hrp, _) = Bech32.decode(text), hrp.hasPrefix("age-plugin-"),
                hrp.hasSuffix("-")
            else { return nil }
            let name = String(hrp.dropFirst(11).dropLast())
            guard AgePlugin.isValidName(name) else { return nil }
            (self.name, encoded) = (name, text.uppercased())
        }

        /// None: a plugin is given every stanza and picks those it opens
        /// (``AgeFile`` calls ``AgePlugin/unwrap(_:with:)`` for all of a plugin's identities).
        package var stanzaType: String { "" }
        /// Its recipient is the plugin's to know: named by its plugin only.
        package var recipientText: String { "an identity of \(AgePlugin.program(name))" }

        /// Any recipient of the same plugin may be its own (only the plugin could tell).
        package func mayBeIdentity(of recipient: String) -> Bool {
            AgePlugin.Recipient(recipient)?.name == name
        }

        /// The file key `stanza` wraps for this identity, from a session of its own.
        package func unwrap(_ stanza: AgeFile.Stanza) throws -> [UInt8]? {
            try AgePlugin.unwrap([stanza], with: [self])
        }
    }

    /// The current settings.
    static var current: Settings { settings.withLock { $0 } }

    /// The stanzas plugin `recipients[0].name` wraps `fileKey` in for each of `recipients`, in
    /// one `recipient-v1` session, and the labels it gave them (none: empty).
    /// - Throws: ``Failure``: an error it sent, a question with no terminal, a timeout.
    static func wrap(_ fileKey: [UInt8], to recipients: [Recipient]) throws(Failure) -> (
        stanzas: [AgeFile.Stanza], labels: Set<String>
    ) {
        let settings = current
        let connection = try AgePluginConnection(
            plugin: recipients[0].name, stateMachine: "recipient-v1", settings: settings)
        defer { connection.end() }
        for recipient in recipients { try connection.send(["add-recipient", recipient.encoded]) }
        try connection.send(["wrap-file-key"], body: fileKey)
        try connection.send(["extension-labels"])
        try connection.send(["done"])
        var session = AgePluginSession(connection, settings: settings)
        var stanzas: [AgeFile.Stanza] = []
        var labels: Set<String>?
        try session.run { (command) throws(Failure) in
            switch command.type {
            case "recipient-stanza":
                let arguments = command.arguments
                guard arguments.count >= 3, arguments[1] == "0", arguments[2] != "scrypt" else {
                    throw connection.fail("it sent a malformed recipient-stanza (file 0 only, not scrypt)")
                }
                stanzas.append(AgeFile.Stanza(arguments: Array(arguments[2...]), body: command.body))
            case "labels":
                let given = Array(command.arguments.dropFirst())
                guard labels == nil, Set(given).count == given.count else {
                    throw connection.fail("it sent labels twice, or a label twice")
                }
                labels = Set(given)
            default:
                return false
            }
            try connection.send(["ok"])
            return true
        }
        connection.finish()
        // A question it could not have answered is a failure only when it then wrapped nothing.
        guard session.firstError == nil, !stanzas.isEmpty else {
            throw session.failure ?? Failure.failed(plugin: recipients[0].name, reason: "it wrapped nothing")
        }
        return (stanzas, labels ?? [])
    }

    /// The file key plugin `identities[0].name` unwraps from one of `stanzas` (a file's, all of
    /// them: the plugin picks those of its types) with one of `identities`, in one
    /// `identity-v1` session; nil when it opens none.
    /// - Throws: ``Failure``: when it opens none, an error it sent, a question with no terminal, a
    ///   timeout.
    static func unwrap(_ stanzas: [AgeFile.Stanza], with identities: [Identity]) throws(Failure) -> [UInt8]? {
        let settings = current
        let connection = try AgePluginConnection(
            plugin: identities[0].name, stateMachine: "identity-v1", settings: settings)
        defer { connection.end() }
        for identity in identities { try connection.send(["add-identity", identity.encoded]) }
        for stanza in stanzas { try connection.send(["recipient-stanza", "0"] + stanza.arguments, body: stanza.body) }
        try connection.send(["done"])
        var session = AgePluginSession(connection, settings: settings)
        var fileKey: [UInt8]?
        try session.run { (command) throws(Failure) in
            guard command.type == "file-key" else { return false }
            guard command.arguments.count == 2, command.arguments[1] == "0", command.body.count == 16, fileKey == nil
            else { throw connection.fail("it sent a malformed file-key (one 16-byte key, for file 0)") }
            fileKey = command.body
            try connection.send(["ok"])
            return true
        }
        connection.finish()
        if let fileKey { return fileKey }
        if let failure = session.failure { throw failure }
        return nil
    }
}
