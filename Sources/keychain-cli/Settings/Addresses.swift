import KeychainCore

extension SecretAddress {
    /// The item an argument names: KEY of `service`, or SERVICE/KEY, split at the first `/` (as
    /// exec's mappings are: docs/commands.md#addressing).
    init(argument text: String, service: ServiceName) throws {
        guard let slash = text.firstIndex(of: "/") else {
            self.init(service: service, key: try KeychainKey(text))
            return
        }
        self.init(
            service: try ServiceName(String(text[..<slash])),
            key: try KeychainKey(String(text[text.index(after: slash)...])))
    }
}
