import Crypto
import FoundationEssentials
import KeychainStore
import KeychainSystem

// `history` and `rollback` on KV version 2: a service is one secret whose versions OpenBao keeps
// (`max_versions`, 10 unless the mount says otherwise); an item's history is the versions in which
// its field changed. Fingerprints are keyed by a key of this process alone: they compare values
// within one listing, and a listing pasted elsewhere gives no way to test a guess.
extension OpenBaoStore: VersionedSecretStore {
    public func history(service: ServiceName, key: KeychainKey) throws(KeychainError) -> [ItemVersion] {
        let fingerprintKey = SymmetricKey(size: .bits256)
        var versions: [ItemVersion] = []
        var previous: (value: JSONValue, details: JSONValue?)?
        for number in try versionNumbers(service) {
            let secret = try read(service, version: number)
            let value = secret.fields[key.rawValue]
            let details = secret.fields[Self.detailsField(key.rawValue)]
            let change: ItemVersion.Change?
            switch (previous, value) {
            case (nil, nil): change = nil
            case (nil, _?): change = .created
            case (_?, nil): change = .deleted
            case (let old?, let new?):
                change = old.value != new ? .valueChanged : old.details != details ? .detailsChanged : nil
            }
            previous = value.map { ($0, details) }
            guard let change else { continue }
            versions.append(
                ItemVersion(
                    revision: String(number), date: secret.modified, author: nil, change: change,
                    fingerprint: value.map { valueFingerprint(KVValue.decode($0), key: fingerprintKey) }))
        }
        return versions.reversed()
    }

    public func secret(service: ServiceName, key: KeychainKey, at revision: String) throws(KeychainError) -> Data? {
        guard let number = Int(revision), number > 0 else {
            throw .invalidName(
                kind: "version", reason: "'\(escapedForDisplay(revision))' is not a KV version number (1, 2, …)")
        }
        return try read(service, version: number).fields[key.rawValue].map(KVValue.decode)
    }

    /// The numbers of the versions OpenBao still keeps of the service's secret, oldest first.
    private func versionNumbers(_ service: ServiceName) throws(KeychainError) -> [Int] {
        struct Answer: Decodable {
            struct Metadata: Decodable { var versions: [String: JSONValue]? }
            var data: Metadata?
        }
        let path = "\(try kvPath(configuration.mount))/metadata/\(try kvPath(service.rawValue))"
        let response = try client.send("GET", path)
        if response.status == 404 { return [] }
        guard response.status == 200 else { throw refused("GET", path, response) }
        let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body))
        return (answer?.data?.versions ?? [:]).keys.compactMap { Int($0) }.sorted()
    }
}
