// A header's plugin recipients and identities (one session per plugin and file, given all of that
// plugin's recipients, or its identities and every stanza), and which identities open a file.
extension AgeFile {
    /// The indices of the `identities` that open one of `file`'s recipient stanzas; nil for a
    /// passphrase file.
    package static func identitiesOpening(_ file: [UInt8], _ identities: [any AgeIdentity]) throws -> [Int]? {
        let stanzas = try parseHeader(file).stanzas
        guard !stanzas.contains(where: { $0.type == "scrypt" }) else { return nil }
        // A plugin's identity is not run (it may ask for a PIN): it may open any stanza of a type
        // none of the keys read.
        let foreign = stanzas.contains { !recipientTypes.contains($0.type) }
        return identities.indices.filter { index in
            if identities[index] is AgePlugin.Identity { return foreign }
            return stanzas.contains {
                $0.type == identities[index].stanzaType && (try? identities[index].unwrap($0)) != nil
            }
        }
    }

    /// The stanzas wrapping `fileKey` for `recipients`: the keys' own, then each plugin's from
    /// one session. A plugin's labels (the spec's `extension-labels`) must be empty beside a key's
    /// stanza, and the same as every other plugin's.
    /// - Throws: ``AgePlugin/Failure``, or what a key's wrapping throws.
    static func stanzas(_ fileKey: [UInt8], _ recipients: [any AgeRecipient]) throws -> [Stanza] {
        var stanzas: [Stanza] = []
        var plugins: [(name: String, recipients: [AgePlugin.Recipient])] = []
        for recipient in recipients {
            guard let plugin = recipient as? AgePlugin.Recipient else {
                stanzas.append(try recipient.wrap(fileKey))
                continue
            }
            if let index = plugins.firstIndex(where: { $0.name == plugin.name }) {
                plugins[index].recipients.append(plugin)
            } else {
                plugins.append((plugin.name, [plugin]))
            }
        }
        let keys = !stanzas.isEmpty
        var firstLabels: Set<String>?
        for plugin in plugins {
            let (wrapped, labels) = try AgePlugin.wrap(fileKey, to: plugin.recipients)
            guard !keys || labels.isEmpty, labels == (firstLabels ?? labels) else {
                let shown = labels.sorted().map { AgePlugin.shown(Array($0.utf8), limit: 40) }.joined(separator: " ")
                throw AgePlugin.Failure.failed(
                    plugin: plugin.name,
                    reason: "its stanzas are labelled (\(shown)) so that they cannot be combined with the file's "
                        + "other recipients")
            }
            firstLabels = labels
            stanzas += wrapped
        }
        return stanzas
    }

    /// The file key one of the plugin identities among `identities` unwraps from `stanzas`, each
    /// plugin in turn given all of its identities and all the stanzas. A plugin that fails does
    /// not stop the next one (the spec allows it); its failure is thrown when none opens the file.
    /// - Throws: ``AgePlugin/Failure``, or ``Failure/noIdentityMatches``.
    /// The header's MAC did not match: a damaged file, or, when a plugin gave the file key
    /// (`plugin`), that plugin's wrong answer (its failure, not the file's).
    static func macMismatch(keyFrom plugin: String?) -> any Error {
        guard let plugin else { return Failure.malformed("the header's MAC does not match (the header was altered)") }
        return AgePlugin.Failure.failed(
            plugin: plugin, reason: "it gave a file key that does not open the file (its MAC does not match)")
    }

    static func unwrapWithPlugins(_ stanzas: [Stanza], _ identities: [any AgeIdentity]) throws -> (
        key: [UInt8], plugin: String?
    ) {
        var plugins: [(name: String, identities: [AgePlugin.Identity])] = []
        for case let identity as AgePlugin.Identity in identities {
            if let index = plugins.firstIndex(where: { $0.name == identity.name }) {
                plugins[index].identities.append(identity)
            } else {
                plugins.append((identity.name, [identity]))
            }
        }
        var failure: AgePlugin.Failure?
        for plugin in plugins {
            do {
                if let key = try AgePlugin.unwrap(stanzas, with: plugin.identities) { return (key, plugin.name) }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
        throw Failure.noIdentityMatches
    }
}
