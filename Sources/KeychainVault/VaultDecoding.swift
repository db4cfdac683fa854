import FoundationEssentials
import KeychainAge
import KeychainFormats
import KeychainStore
import KeychainSystem

// How VaultStore turns its entries into the plaintext document and back.
extension VaultStore {
    package func decode(_ plaintext: [UInt8]) throws(KeychainError)
        -> (Entries, recipients: [VaultRecipient]?, collectionLabel: String?)
    {
        let document: VaultDocument
        do {
            document = try JSONDecoder.vault.decode(VaultDocument.self, from: Data(plaintext))
        } catch {
            throw KeychainError.vaultCorrupt(
                path: path, reason: "it decrypts, but not to a keychain-cli vault document (\(error))")
        }
        guard VaultDocument.formats.contains(document.format) else {
            throw KeychainError.vaultCorrupt(path: path, reason: "its document's format is '\(document.format)'")
        }
        guard (VaultDocument.currentVersion...VaultDocument.detailsVersion).contains(document.version) else {
            throw KeychainError.vaultCorrupt(
                path: path,
                reason: "its document is version \(document.version), and this version reads versions up to "
                    + "\(VaultDocument.detailsVersion) (was it written by a newer keychain-cli?)")
        }
        var recipients: [VaultRecipient]?
        if let listed = document.recipients {
            do {
                recipients = try listed.map { (text) throws(RecipientError) in try VaultRecipient(text) }
            } catch {
                throw KeychainError.vaultCorrupt(path: path, reason: "its recipient list is malformed: \(error)")
            }
        }
        var entries: Entries = [:]
        for (index, item) in document.items.enumerated() {
            guard let service = try? ServiceName(item.service), let key = try? KeychainKey(item.key),
                let secret = item.bytes
            else {
                throw KeychainError.vaultCorrupt(path: path, reason: "its item \(index + 1) is malformed")
            }
            guard entries[service]?[key] == nil else {
                throw KeychainError.vaultCorrupt(path: path, reason: "its item \(index + 1) is a duplicate")
            }
            entries[service, default: [:]][key] = Entry(
                secret: secret, created: item.created, modified: item.modified, details: item.details)
        }
        return (entries, recipients, document.collectionLabel)
    }

    func encode(_ entries: Entries, recipients: [VaultRecipient]?, collectionLabel: String?) throws -> [UInt8] {
        var items: [VaultDocument.Item] = []
        for (service, keys) in entries.sorted(by: { $0.key < $1.key }) {
            for (key, entry) in keys.sorted(by: { $0.key < $1.key }) {
                var item = VaultDocument.Item(
                    service: service.rawValue, key: key.rawValue, secret: entry.secret, created: entry.created,
                    modified: entry.modified)
                item.details = entry.details
                items.append(item)
            }
        }
        return Array(
            try JSONEncoder.sortedKeys(pretty: true).encode(
                VaultDocument(
                    items: items, recipients: recipients?.map(\.description), collectionLabel: collectionLabel))) + [
                UInt8(ascii: "\n")
            ]
    }
}
