import FoundationEssentials
import KeychainCore

// Which secrets scan looks for: every key of --from's services (the service of -s when none is
// named), or of every service; read as exec --from reads a service, in one listing and one read
// of many.

extension KeychainCLI.Scan {
    /// The shortest secret scan looks for, in characters (Unicode scalars; bytes where it is not
    /// UTF-8), and the shortest form of one: a shorter one would be found all over.
    static let minimumLength = 8

    /// The secrets to look for, with their services and keys; those shorter than
    /// ``minimumLength`` are left out with a note naming them.
    /// - Throws: the backend's errors; ``CommandFailure`` (64) when none is left to look for.
    func secretsToFind() throws -> (names: [(service: String, key: String)], values: [[UInt8]]) {
        let keychain = try keychain()
        let store = keychain.store
        var listings: [ItemListing] = []
        var services: [String] = []
        if allServices {
            listings.append(try keychain.listing(ofAllServices: true))
        } else {
            services =
                from.isEmpty
                ? [keychain.service.rawValue]
                : from.reduce(into: []) {
                    if !$0.contains($1) { $0.append($1) }
                }
            for service in services {
                listings.append(try Keychain(service: try ServiceName(service), store: store).listing())
            }
        }
        var names: [(service: String, key: String)] = []
        var values: [[UInt8]] = []
        var short: [String] = []
        for listing in listings {
            // An item another program stored under a name keychain-cli cannot address (an empty
            // key) is not one of the secrets to look for.
            let items = listing.items.filter {
                (try? ServiceName($0.service)) != nil && (try? KeychainKey($0.key)) != nil
            }
            let addresses = try items.map {
                SecretAddress(service: try ServiceName($0.service), key: try KeychainKey($0.key))
            }
            var secrets = try store.secrets(of: addresses, listedIn: listing)
            for (index, item) in items.enumerated() where secrets[index] != nil {  // nil: deleted since
                var value = Array(secrets[index]!)
                wipe(&secrets[index]!)  // in place: the array holds the only reference
                let length = String(validating: value, as: UTF8.self)?.unicodeScalars.count ?? value.count
                guard length >= Self.minimumLength else {
                    short.append("\(escapedForDisplay(item.service))/\(escapedForDisplay(item.key))")
                    wipe(&value)
                    continue
                }
                names.append((item.service, item.key))
                values.append(value)
            }
        }
        if !short.isEmpty {
            warn(
                "scan: not looking for \(short.joined(separator: ", ")): shorter than \(Self.minimumLength) characters, "
                    + "\(short.count == 1 ? "it" : "each") would be found all over")
        }
        guard !values.isEmpty else {
            let source =
                allServices
                ? "no service"
                : services.map { quotedValue($0, expected: "a service name") }
                    .joined(separator: ", ")
            throw CommandFailure.usage(
                "\(source) holds no secret of \(Self.minimumLength) characters or more to look for; nothing was "
                    + "scanned. Name the services with --from SERVICE (or --all-services); list them with "
                    + "keychain-cli list --all-services")
        }
        return (names, values)
    }
}
